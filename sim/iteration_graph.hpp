// The task graph of one iteration, as sim/simulator.cpp builds it: per pipeline stage a compute
// stream (TP collectives inline, as Megatron-LM runs them), sends to the next and the previous
// stage, the DP reduction and the DP gather (ZeRO); each step's tasks, ZeRO-3's layer-by-layer
// timeline, the pipeline's transfers and the optimizer. Internal to the simulator;
// docs/simulator.md describes the graph.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/pipeline_schedule.hpp"
#include "plan/rank_memory.hpp"
#include "plan/zero3_collectives.hpp"
#include "sim/cost_model.hpp"
#include "sim/event_engine.hpp"
#include "sim/simulation_trace.hpp"
#include "sim/step_cost.hpp"

namespace trainsim::iteration_graph {

constexpr int32_t kStreamsPerStage = 5;
enum Stream : int32_t { kCompute = 0, kSendNext = 1, kSendPrev = 2, kDpReduce = 3, kDpGather = 4 };

struct Builder {
  Builder(const ParallelPlan& p, const CostModel& c, const IterationWork& w, const PipelineSchedule& sch, GroupScope tp,
          const DpScopes& d)
      : plan(p), cost(c), work(w), schedule(sch), tp_scope(tp), dp(d) {}
  const ParallelPlan& plan;
  const CostModel& cost;
  const IterationWork& work;
  const PipelineSchedule& schedule;
  GroupScope tp_scope;
  DpScopes dp;
  double p2p_s = 0;
  double bucket_params = 40e6;
  Zero3Calls zero3_per_layer;  // ZeRO-3's collective calls per layer (plan/zero3_collectives.hpp)
  TaskGraph graph;
  std::vector<StepCost> parts;  // compute/TP split of each task (zero for non-compute tasks)
  std::vector<std::vector<TaskId>> forward_first, forward, backward_first, backward_last;  // [virtual stage][micro-batch]
  std::vector<std::vector<TaskId>> reductions;                                // [stage]
  std::vector<TaskId> last_task;                                              // [stage]: its last compute pass
  std::vector<TaskId> prefetch_point;  // [stage]: ZeRO-3's next gather may start when this task ends

  int64_t virtual_stages() const { return schedule.stages * schedule.chunks; }

  TaskId add(int64_t stage, Stream stream, double seconds, TaskCategory category, int64_t label, StepCost part = {}) {
    const TaskId id = graph.add(static_cast<int32_t>(stage * kStreamsPerStage + stream), seconds,
                                static_cast<int32_t>(category), static_cast<int32_t>(label));
    parts.push_back(part);
    record.added();
    return id;
  }

  TaskDetailRecorder record;  // the trace's task details (SimulationTrace::details), when asked for

  double layer_count(int64_t vs) const {
    const ChunkPlace place = place_of_virtual_stage(v_placement(schedule.kind), schedule.stages, vs);
    return static_cast<double>(chunk_layers(place.stage, place.chunk));
  }

  std::vector<StepCost> step_costs;         // [virtual stage * 2 + backward], priced once
  std::vector<StepCost> weight_grad_costs;  // [virtual stage]: W of a Zero Bubble schedule

  StepCost step_cost(int64_t vs, bool backward) const { return step_costs[static_cast<size_t>(vs * 2 + (backward ? 1 : 0))]; }

  double chunk_params(int64_t stage) const {
    return work.stages[static_cast<size_t>(stage)].params / static_cast<double>(schedule.chunks);
  }
  double chunk_expert_params(int64_t stage) const {
    return work.stages[static_cast<size_t>(stage)].expert_params / static_cast<double>(schedule.chunks);
  }
  // A DP collective over `share` of a chunk's parameters (dense and experts, each in its group).
  double chunk_dp_s(CollectiveKind kind, int64_t stage, double share, double bytes_per_param) const {
    return dp_collective_s(cost, kind, chunk_params(stage) * share, chunk_expert_params(stage) * share, bytes_per_param, dp);
  }

  // The same share of a chunk's parameters moved in `calls` collective calls (each paying its
  // latency): ZeRO-3's calls per layer, fewer than one when a call spans layers.
  double chunk_dp_calls_s(CollectiveKind kind, int64_t stage, double share, double bytes_per_param, double calls) const {
    if (calls <= 0) return chunk_dp_s(kind, stage, share, bytes_per_param);
    return calls * chunk_dp_s(kind, stage, share / calls, bytes_per_param);
  }

  // Gradient reduction of one chunk's parameters in buckets; each bucket waits on `ready[i]`.
  void add_reductions(int64_t stage, const std::vector<TaskId>& ready);

  bool zero3() const { return fsdp_layer_by_layer(plan) && plan.dp * plan.cp > 1; }
  int64_t chunk_layers(int64_t stage, int64_t chunk) const {
    return std::max<int64_t>(1, work.stages[static_cast<size_t>(stage)].chunk_layers[static_cast<size_t>(chunk)]);
  }

  void add_compute(int64_t stage);

  // ZeRO-3 (FSDP) runs a step layer by layer: the all-gather of layer i + 1 is issued when layer
  // i starts (FSDP's one-layer prefetch) and each layer's gradients are reduce-scattered when its
  // backward ends (FSDP2 reduces per layer). With per-layer compute c, gather g and reduce-scatter
  // r (k layers) that timeline is exact in three compute tasks: the first layer (c), the layers
  // between ((k - 1) max(c, g) - c: layer i starts at i max(c, g)) and the last (c); two gathers
  // (layer 0, issued when the previous step's last layer starts, then the other k - 1) and two
  // reduce-scatters (k - 1 after the first layer, the last after the last layer), so a step costs
  // a constant number of tasks whatever its layers. docs/simulator.md derives it.
  struct LayeredStep {
    TaskId first = -1, mid = -1, last = -1;
    TaskId gather_head = -1, gather_rest = -1, reduce_body = -1, reduce_tail = -1;
  };
  LayeredStep add_layered(int64_t stage, const PipelineStep& step, const StepCost& c, bool gather, bool reduce, TaskCategory category);

  void describe_layered(int64_t vs, bool backward, const LayeredStep& l, int64_t k, const StepCost& one, double period, double g, double r);

  // A backward (or with Zero Bubble, its B and W passes). The pass that completes a micro-batch's
  // gradients is split per gradient bucket for its last micro-batch, so reductions overlap it.
  void add_backward(int64_t stage, const PipelineStep& step, bool gather);

  // Output of `from` feeds `to` (on virtual stage `to_vs`): a send on the stream towards that
  // rank, or a plain dependency when the V puts both on this rank.
  void link(int64_t stage, TaskId from, TaskId to, int64_t to_vs, TaskCategory category, int64_t micro_batch);

  void add_transfers(int64_t stage);

  void add_optimizer(int64_t stage, TaskId last_compute);
};

}  // namespace trainsim::iteration_graph
