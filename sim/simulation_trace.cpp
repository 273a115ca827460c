// Per-layer summaries for traces (FLOPs from the lowered ops, collectives split by group) and the
// recorder of task details.
#include "sim/simulation_trace.hpp"

#include <utility>

namespace trainsim {

namespace {
CommGroup comm_group(GroupKind kind) {
  switch (kind) {
    case GroupKind::kCp: return CommGroup::kCp;
    case GroupKind::kEp:
    case GroupKind::kExpertTp:
    case GroupKind::kExpertTpEp: return CommGroup::kEp;
    default: return CommGroup::kTp;  // TP / SP, and the stage's FP8 amax reduction
  }
}
}  // namespace

LayerPassSummary summarize_layer_pass(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes) {
  LayerPassSummary out;
  for (const Op& op : ops) {
    out.flops += op.flops();
    if (op.kind != OpKind::kCollective) continue;
    const size_t g = static_cast<size_t>(comm_group(op.group));
    out.comm_bytes[g] += op.bytes;
    out.comm_s[g] += cost.op_s(op, scopes.of(op.group));
  }
  return out;
}

void TaskDetailRecorder::start(std::vector<TaskDetail>* details, std::vector<int32_t> layers_before) {
  details_ = details;
  layers_before_ = std::move(layers_before);
}

void TaskDetailRecorder::set(TaskId id, const TaskDetail& d) {
  if (details_) (*details_)[static_cast<size_t>(id)] = d;
}

void TaskDetailRecorder::bytes(TaskId id, double bytes) {
  TaskDetail d;
  d.bytes = bytes;
  set(id, d);
}

int32_t TaskDetailRecorder::model_layer(int64_t vs, int64_t k, bool backward, int64_t from) const {
  return layers_before_[static_cast<size_t>(vs)] + static_cast<int32_t>(backward ? k - 1 - from : from);
}

void TaskDetailRecorder::layers(TaskId id, int64_t vs, int64_t k, bool backward, int64_t from, int64_t layers, double lead_s,
                                double period_s, const StepCost& one) {
  if (!details_) return;
  TaskDetail d;
  d.virtual_stage = static_cast<int32_t>(vs);
  d.first_layer = model_layer(vs, k, backward, from);
  d.layers = static_cast<int32_t>(layers);
  d.lead_s = lead_s;
  d.layer_period_s = period_s;
  d.layer = one;
  set(id, d);
}

void TaskDetailRecorder::layer_collective(TaskId id, TaskId first_compute, int64_t vs, int64_t k, bool backward, int64_t from,
                                          int64_t layers, double period_s, double layer_s, double bytes_per_layer,
                                          const StepCost& one) {
  if (!details_ || id < 0) return;
  TaskDetail d;
  d.virtual_stage = static_cast<int32_t>(vs);
  d.first_layer = model_layer(vs, k, backward, from);
  d.layers = static_cast<int32_t>(layers);
  d.layer_period_s = period_s;
  d.layer_s = layer_s;
  d.layer = one;
  d.bytes = bytes_per_layer;
  d.peer = first_compute;
  set(id, d);
}

}  // namespace trainsim
