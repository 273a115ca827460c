// Per-layer summaries for traces: FLOPs from the lowered ops, collectives split by group.
#include "sim/simulation_trace.hpp"

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

}  // namespace trainsim
