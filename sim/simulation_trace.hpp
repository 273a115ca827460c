// What a trace of one simulated iteration needs beside the task graph and its timing: for each
// task, the layers it runs (so a drawing can show each layer where the schedule puts it), the
// bytes it moves and, for a send, the task that receives it; for one layer's forward and
// backward, its FLOPs and its collectives per group. predict_iteration fills it when
// SimulationOptions::keep_trace asks; reports/perfetto_trace.cpp draws it. Nothing here changes
// a timing.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "plan/lowering.hpp"
#include "sim/cost_model.hpp"
#include "sim/event_engine.hpp"
#include "sim/step_cost.hpp"

namespace trainsim {

enum class TaskCategory : int32_t { kForward, kBackward, kSendForward, kSendBackward, kDpReduce, kDpGather, kOptimizer };

struct TaskDetail {
  int32_t virtual_stage = -1;
  // Compute: the model layers it runs, from `first_layer` (a backward counts down), the first
  // `lead_s` after its start, then one every `layer_period_s`, each taking `layer`'s time.
  // A DP collective of several layers: one every `layer_period_s` from the start of `peer`
  // (the step's first compute task), each `layer_s` long (after the layer for a reduce-scatter).
  int32_t first_layer = 0;
  int32_t layers = 0;  // 0: not drawn per layer (a gradient bucket's share of a backward)
  double lead_s = 0;
  double layer_period_s = 0;
  StepCost layer;
  double layer_s = 0;
  double bytes = 0;     // a collective's buffer (nccl-tests convention) or a send's activation
  double params = 0;    // the optimizer's parameters
  TaskId peer = -1;     // a send: the task that waits for it; a DP collective: see above
  int32_t peer_stage = -1;
};

// One transformer layer, one micro-batch, one pass, on one rank.
enum class CommGroup : int32_t { kTp, kCp, kEp };
struct LayerPassSummary {
  double flops = 0;
  std::array<double, 3> comm_bytes{};  // [CommGroup]: the collectives' buffers
  std::array<double, 3> comm_s{};      // [CommGroup]: their times, each priced alone
};
LayerPassSummary summarize_layer_pass(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes);

// Fills the task details while the simulator builds its graph (one call per task added); does
// nothing unless started with a vector to fill. Layer positions count from a step's first layer
// (a backward's first is the virtual stage's last).
class TaskDetailRecorder {
 public:
  void start(std::vector<TaskDetail>* details, std::vector<int32_t> layers_before);  // [virtual stage]: layers before it
  bool on() const { return details_ != nullptr; }
  void added() {
    if (details_) details_->emplace_back();
  }
  void set(TaskId id, const TaskDetail& d);
  void bytes(TaskId id, double bytes);
  // A compute task running `layers` whole layers from position `from` of virtual stage `vs`'s `k`.
  void layers(TaskId id, int64_t vs, int64_t k, bool backward, int64_t from, int64_t layers, double lead_s, double period_s,
              const StepCost& one);
  // A ZeRO-3 collective of `layers` layers from position `from`, timed from the step's first compute task.
  void layer_collective(TaskId id, TaskId first_compute, int64_t vs, int64_t k, bool backward, int64_t from, int64_t layers,
                        double period_s, double layer_s, double bytes_per_layer, const StepCost& one);

 private:
  int32_t model_layer(int64_t vs, int64_t k, bool backward, int64_t from) const;
  std::vector<TaskDetail>* details_ = nullptr;
  std::vector<int32_t> layers_before_;
};

struct SimulationTrace {
  TaskGraph graph;
  std::vector<TaskTiming> timing;
  int64_t streams_per_stage = 0;
  std::vector<TaskDetail> details;    // [task]
  LayerPassSummary forward, backward;  // the backward with its recomputation
  double layer_params = 0;             // a layer's parameters on one rank
};

}  // namespace trainsim
