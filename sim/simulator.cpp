// Builds and runs the task graph of one iteration. Streams per pipeline stage: compute (with TP
// collectives inline, as Megatron-LM runs them), send to the next stage, send to the previous
// stage, DP reduction, DP gather (ZeRO). docs/simulator.md describes the graph.
#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "model/flops.hpp"
#include "plan/lowering.hpp"
#include "plan/pipeline_schedule.hpp"
#include "plan/rank_grid.hpp"
#include "plan/zero3_collectives.hpp"
#include "plan/recompute_span.hpp"
#include "plan/zero_bubble_schedule.hpp"
#include "sim/op_category_times.hpp"
#include "sim/step_cost.hpp"

namespace trainsim {

namespace {

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
  void add_reductions(int64_t stage, const std::vector<TaskId>& ready) {
    const double share = 1.0 / static_cast<double>(ready.size());
    const CollectiveKind kind = plan.zero_stage == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter;
    for (TaskId r : ready) {
      const TaskId id = add(stage, kDpReduce, chunk_dp_s(kind, stage, share, work.grad_bytes_per_param), TaskCategory::kDpReduce, 0);
      graph.add_dep(id, r);
      record.bytes(id, chunk_params(stage) * share * work.grad_bytes_per_param);
      reductions[static_cast<size_t>(stage)].push_back(id);
    }
  }

  bool zero3() const { return fsdp_layer_by_layer(plan) && plan.dp * plan.cp > 1; }
  int64_t chunk_layers(int64_t stage, int64_t chunk) const {
    return std::max<int64_t>(1, work.stages[static_cast<size_t>(stage)].chunk_layers[static_cast<size_t>(chunk)]);
  }

  void add_compute(int64_t stage) {
    std::vector<bool> gathered(static_cast<size_t>(schedule.chunks), false);
    for (const PipelineStep& step : schedule.steps[static_cast<size_t>(stage)]) {
      const int64_t vs = schedule.virtual_stage(stage, step.chunk);
      const size_t v = static_cast<size_t>(vs), mb = static_cast<size_t>(step.micro_batch);
      // FSDP gathers a chunk's weights for every step, or with a pipeline once (kept: torchtitan
      // does not reshard after the forward when it pipelines).
      const bool needs_gather = !keeps_gathered_weights(plan) || !gathered[static_cast<size_t>(step.chunk)];
      const bool gather = zero3() && step.kind != StepKind::kWeightGrad && needs_gather;
      if (gather) gathered[static_cast<size_t>(step.chunk)] = true;
      if (step.kind == StepKind::kForward) {
        const StepCost c = step_cost(vs, false);
        if (zero3()) {
          const LayeredStep l = add_layered(stage, step, c, gather, false, TaskCategory::kForward);
          forward_first[v][mb] = l.first;
          forward[v][mb] = l.last;
        } else {
          forward[v][mb] = forward_first[v][mb] = add(stage, kCompute, c.total(), TaskCategory::kForward, step.micro_batch, c);
          const double k = layer_count(vs);
          record.layers(forward[v][mb], vs, static_cast<int64_t>(k), false, 0, static_cast<int64_t>(k), 0.0, c.total() / k, c.scaled(1.0 / k));
        }
        last_task[static_cast<size_t>(stage)] = forward[v][mb];
        continue;
      }
      add_backward(stage, step, gather);
    }
  }

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
  LayeredStep add_layered(int64_t stage, const PipelineStep& step, const StepCost& c, bool gather, bool reduce, TaskCategory category) {
    const int64_t k = chunk_layers(stage, step.chunk);
    const double layers = static_cast<double>(k), share = 1.0 / layers;
    const double g = gather ? chunk_dp_calls_s(CollectiveKind::kAllGather, stage, share, work.weight_bytes_per_param, zero3_per_layer.gathers_per_layer) : 0.0;
    const StepCost one = c.scaled(share);
    const double period = std::max(one.total(), g);
    const size_t s = static_cast<size_t>(stage);
    const TaskId before = last_task[s];
    LayeredStep l;
    if (gather) {
      l.gather_head = add(stage, kDpGather, g, TaskCategory::kDpGather, step.micro_batch);
      if (prefetch_point[s] >= 0) graph.add_dep(l.gather_head, prefetch_point[s]);
      if (k > 1) l.gather_rest = add(stage, kDpGather, g * (layers - 1.0), TaskCategory::kDpGather, step.micro_batch);
    }
    l.first = l.last = add(stage, kCompute, one.total(), category, step.micro_batch, one);
    if (l.gather_head >= 0) graph.add_dep(l.first, l.gather_head);
    if (k > 1) {
      l.mid = add(stage, kCompute, period * (layers - 1.0) - one.total(), category, step.micro_batch, c.scaled((layers - 2.0) * share));
      l.last = add(stage, kCompute, one.total(), category, step.micro_batch, one);
    }
    prefetch_point[s] = k > 1 ? l.mid : before;  // the next step's first gather is issued when this last layer starts
    const double r = reduce ? chunk_dp_calls_s(CollectiveKind::kReduceScatter, stage, share, work.grad_bytes_per_param, zero3_per_layer.reduces_per_layer) : 0.0;
    if (reduce && k > 1) {
      l.reduce_body = add(stage, kDpReduce, r * (layers - 1.0), TaskCategory::kDpReduce, step.micro_batch);
      graph.add_dep(l.reduce_body, l.first);
      reductions[s].push_back(l.reduce_body);
    }
    if (reduce) {
      l.reduce_tail = add(stage, kDpReduce, r, TaskCategory::kDpReduce, step.micro_batch);
      graph.add_dep(l.reduce_tail, l.last);
      reductions[s].push_back(l.reduce_tail);
    }
    if (record.on()) describe_layered(schedule.virtual_stage(stage, step.chunk), category == TaskCategory::kBackward, l, k, one, period, g, r);
    return l;
  }

  void describe_layered(int64_t vs, bool backward, const LayeredStep& l, int64_t k, const StepCost& one, double period, double g, double r) {
    record.layers(l.first, vs, k, backward, 0, 1, 0.0, one.total(), one);
    if (k > 1) {
      record.layers(l.mid, vs, k, backward, 1, k - 2, period - one.total(), period, one);
      record.layers(l.last, vs, k, backward, k - 1, 1, 0.0, one.total(), one);
    }
    // Per-layer collectives drawn where the layer-by-layer schedule puts them: gather i + 1 as
    // layer i starts, reduce-scatter j once layer j's backward has ended.
    const int64_t stage = place_of_virtual_stage(v_placement(schedule.kind), schedule.stages, vs).stage;
    const double layer_params = chunk_params(stage) / static_cast<double>(k);
    const double gathered = layer_params * work.weight_bytes_per_param, reduced = layer_params * work.grad_bytes_per_param;
    record.layer_collective(l.gather_head, l.first, vs, k, backward, 0, 1, period, g, gathered, one);
    record.layer_collective(l.gather_rest, l.first, vs, k, backward, 1, k - 1, period, g, gathered, one);
    record.layer_collective(l.reduce_body, l.first, vs, k, backward, 0, k - 1, period, r, reduced, one);
    record.layer_collective(l.reduce_tail, l.first, vs, k, backward, k - 1, 1, period, r, reduced, one);
  }

  // A backward (or with Zero Bubble, its B and W passes). The pass that completes a micro-batch's
  // gradients is split per gradient bucket for its last micro-batch, so reductions overlap it.
  void add_backward(int64_t stage, const PipelineStep& step, bool gather) {
    const int64_t vs = schedule.virtual_stage(stage, step.chunk);
    const size_t v = static_cast<size_t>(vs), mb = static_cast<size_t>(step.micro_batch);
    const bool zero_bubble = is_zero_bubble(schedule.kind);
    const bool completes_gradients = !zero_bubble || step.kind == StepKind::kWeightGrad;
    const bool bucketed = plan.dp * plan.cp > 1 && !zero3();
    StepCost c = step_cost(vs, true);
    if (zero_bubble) {
      const StepCost& w = weight_grad_costs[v];
      c = step.kind == StepKind::kWeightGrad ? w : StepCost{c.compute_s - w.compute_s, c.tp_s - w.tp_s, c.host_idle_s};
    }
    const bool last_micro_batch = step.micro_batch == schedule.micro_batches - 1;
    std::vector<TaskId> ids;
    if (zero3()) {
      // FSDP reduce-scatters each micro-batch's gradients, or with a pipeline (gradients
      // accumulated unsharded) once after the last.
      const bool reduce = completes_gradients && (!keeps_gathered_weights(plan) || last_micro_batch);
      const LayeredStep l = add_layered(stage, step, c, gather, reduce, TaskCategory::kBackward);
      ids = {l.first, l.last};
    } else {
      const bool split = completes_gradients && bucketed && plan.dp_overlap && last_micro_batch;
      const int64_t pieces = split ? std::max<int64_t>(1, static_cast<int64_t>(std::ceil(chunk_params(stage) / bucket_params))) : 1;
      for (int64_t i = 0; i < pieces; ++i) {
        const StepCost piece = c.scaled(1.0 / static_cast<double>(pieces));
        ids.push_back(add(stage, kCompute, piece.total(), TaskCategory::kBackward, step.micro_batch, piece));
      }
      const double k = layer_count(vs);
      if (pieces == 1) record.layers(ids[0], vs, static_cast<int64_t>(k), true, 0, static_cast<int64_t>(k), 0.0, c.total() / k, c.scaled(1.0 / k));
      if (split) add_reductions(stage, ids);
    }
    last_task[static_cast<size_t>(stage)] = ids.back();
    if (step.kind == StepKind::kBackward) {
      backward_first[v][mb] = ids.front();
      backward_last[v][mb] = ids.back();
      graph.add_dep(ids.front(), forward[v][mb]);
    } else {
      graph.add_dep(ids.front(), backward_last[v][mb]);
    }
  }

  // Output of `from` feeds `to` (on virtual stage `to_vs`): a send on the stream towards that
  // rank, or a plain dependency when the V puts both on this rank.
  void link(int64_t stage, TaskId from, TaskId to, int64_t to_vs, TaskCategory category, int64_t micro_batch) {
    const int64_t to_stage = place_of_virtual_stage(v_placement(schedule.kind), schedule.stages, to_vs).stage;
    if (to_stage == stage) {
      graph.add_dep(to, from);
      return;
    }
    const TaskId t = add(stage, to_stage > stage ? kSendNext : kSendPrev, p2p_s, category, micro_batch);
    graph.add_dep(t, from);
    graph.add_dep(to, t);
    TaskDetail d;
    d.virtual_stage = static_cast<int32_t>(to_vs);
    d.bytes = work.stages[static_cast<size_t>(stage)].send_bytes;
    d.peer = to;
    d.peer_stage = static_cast<int32_t>(to_stage);
    record.set(t, d);
  }

  void add_transfers(int64_t stage) {
    const int64_t last = virtual_stages() - 1;
    for (const PipelineStep& step : schedule.steps[static_cast<size_t>(stage)]) {
      const int64_t vs = schedule.virtual_stage(stage, step.chunk);
      const size_t mb = static_cast<size_t>(step.micro_batch), v = static_cast<size_t>(vs);
      if (step.kind == StepKind::kForward && vs < last) {
        link(stage, forward[v][mb], forward_first[v + 1][mb], vs + 1, TaskCategory::kSendForward, step.micro_batch);
      } else if (step.kind == StepKind::kBackward && vs > 0) {
        link(stage, backward_last[v][mb], backward_first[v - 1][mb], vs - 1, TaskCategory::kSendBackward, step.micro_batch);
      }
    }
  }

  void add_optimizer(int64_t stage, TaskId last_compute) {
    if (plan.dp * plan.cp > 1 && !zero3() && !plan.dp_overlap) {
      for (int64_t c = 0; c < schedule.chunks; ++c) add_reductions(stage, {last_compute});
    }
    const StageWork& w = work.stages[static_cast<size_t>(stage)];
    auto& stage_reductions = reductions[static_cast<size_t>(stage)];
    if (dp.replicas.size > 1) {
      // HSDP: each shard's gradients are all-reduced across the shard groups once they are reduced.
      const TaskId across = add(stage, kDpReduce, replica_reduce_s(cost, w.params, w.expert_params, work.grad_bytes_per_param, dp),
                                TaskCategory::kDpReduce, 0);
      for (TaskId r : stage_reductions) graph.add_dep(across, r);
      record.bytes(across, w.params / dp.dense_ranks * work.grad_bytes_per_param);
      graph.add_dep(across, last_compute);
      stage_reductions.push_back(across);
    }
    const double sharded = optimizer_params(w.params, w.expert_params, plan.zero_stage, dp);
    const TaskId opt = add(stage, kCompute, cost.optimizer_s(sharded) + weight_cast_s(cost, work, w), TaskCategory::kOptimizer, 0);
    for (TaskId r : reductions[static_cast<size_t>(stage)]) graph.add_dep(opt, r);
    TaskDetail d;
    d.params = sharded;
    record.set(opt, d);
    if (plan.dp * plan.cp > 1 && !zero3() && (plan.zero_stage == 1 || plan.zero_stage == 2)) {
      // The distributed optimizer all-gathers the updated 16-bit weights.
      const TaskId gather = add(stage, kDpGather,
                                dp_collective_s(cost, CollectiveKind::kAllGather, w.params, w.expert_params, work.weight_bytes_per_param, dp),
                                TaskCategory::kDpGather, 0);
      graph.add_dep(gather, opt);
      record.bytes(gather, w.params * work.weight_bytes_per_param);
    }
  }
};

// Splits the critical stage's timeline from `start_s` into the breakdown's parts (they sum to the
// iteration time).
PhaseBreakdown attribute(const Builder& b, const std::vector<TaskTiming>& timing, int64_t stage, double start_s, double iteration_s) {
  PhaseBreakdown out;
  const auto& tasks = b.graph.tasks();
  double cursor = start_s;
  double stage_end = 0.0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].stream / kStreamsPerStage != stage) continue;
    stage_end = std::max(stage_end, timing[i].end_s);
    if (tasks[i].stream % kStreamsPerStage != kCompute) continue;
    const double gap = timing[i].start_s - cursor;
    if (gap > 0) {
      const TaskId latest = timing[i].waited_on;
      const auto category = latest < 0 ? TaskCategory::kForward : static_cast<TaskCategory>(tasks[static_cast<size_t>(latest)].category);
      if (category == TaskCategory::kSendForward || category == TaskCategory::kSendBackward) {
        const double transfer = tasks[static_cast<size_t>(latest)].duration_s;
        out.pp_comm_exposed_s += std::min(gap, transfer);
        out.bubble_s += gap - std::min(gap, transfer);
      } else if (category == TaskCategory::kDpReduce || category == TaskCategory::kDpGather) {
        out.dp_comm_exposed_s += gap;
      } else {
        out.bubble_s += gap;
      }
    }
    if (static_cast<TaskCategory>(tasks[i].category) == TaskCategory::kOptimizer) {
      out.optimizer_s += tasks[i].duration_s;
    } else {
      // Compute's wall time: the kernels and the device waiting for the host to issue them.
      out.compute_s += b.parts[i].compute_s + b.parts[i].host_idle_s;
      out.tp_comm_exposed_s += b.parts[i].tp_s;
      // A ZeRO-3 step's layers waiting for their prefetched all-gathers (add_layered).
      out.dp_comm_exposed_s += std::max(0.0, tasks[i].duration_s - b.parts[i].total());
    }
    cursor = timing[i].end_s;
  }
  out.dp_comm_exposed_s += stage_end - cursor;  // the weight all-gather after the optimizer
  out.bubble_s += iteration_s - (stage_end - start_s);  // waiting for a slower stage
  return out;
}

// The critical stage, the iteration time and its breakdown. Zero Bubble's optimizer
// post-validation lets each stage start the next iteration without a global synchronisation: the
// iteration then takes the longest stage span, not the makespan.
void time_iteration(const Builder& b, const std::vector<TaskTiming>& timing, const ParallelPlan& plan, Prediction& out) {
  const bool unsynchronised = is_zero_bubble(plan.schedule);
  std::vector<double> stage_end(static_cast<size_t>(plan.pp), 0.0), stage_start(static_cast<size_t>(plan.pp), 1e300);
  for (size_t i = 0; i < timing.size(); ++i) {
    const auto& task = b.graph.tasks()[i];
    const size_t stage = static_cast<size_t>(task.stream / kStreamsPerStage);
    stage_end[stage] = std::max(stage_end[stage], timing[i].end_s);
    if (task.stream % kStreamsPerStage == kCompute) stage_start[stage] = std::min(stage_start[stage], timing[i].start_s);
  }
  std::vector<double> span = stage_end;
  for (size_t s = 0; s < span.size(); ++s) span[s] -= unsynchronised ? stage_start[s] : 0.0;
  out.critical_stage = std::max_element(span.begin(), span.end()) - span.begin();
  out.iteration_time_s = span[static_cast<size_t>(out.critical_stage)];
  const double start_s = unsynchronised ? stage_start[static_cast<size_t>(out.critical_stage)] : 0.0;
  out.breakdown = attribute(b, timing, out.critical_stage, start_s, out.iteration_time_s);
}

// Whether every rank fits the GPU as the device sees it (the tensors at their peak, the CUDA
// context, workspace and NCCL buffers; the allocator's reserve takes only the room left); says by
// how much when it does not.
void check_fit(const Hardware& hardware, const CostModel& cost, Prediction& out) {
  out.memory_capacity_gib = bytes_to_gib(hardware.gpu.memory_bytes);
  out.device = device_peak(out.memory, out.plan, hardware, cost.allocator_reserve_fraction());
  const DeviceMemory& d = out.device.memory;
  const double used_gib = bytes_to_gib(d.device_used_bytes);
  if (used_gib > out.memory_capacity_gib) {
    out.fits = false;
    char reason[200];
    std::snprintf(reason, sizeof reason,
                  "needs %.1f GiB on pipeline stage %lld (%.1f of tensors, %.1f CUDA context, workspace and NCCL buffers), "
                  "the GPU has %.1f GiB",
                  used_gib, static_cast<long long>(out.device.stage), bytes_to_gib(d.allocated_bytes),
                  bytes_to_gib(d.device_used_bytes - d.reserved_bytes), out.memory_capacity_gib);
    out.infeasible_reason = reason;
  }
}

// Zero Bubble's order comes from the pass times, the median (virtual) stage's as its scheduler
// takes them.
PipelineSchedule make_schedule(const ModelSpec& model, const ParallelPlan& plan, const std::vector<StepCost>& steps,
                               const std::vector<StepCost>& weight_grads, double p2p_s) {
  if (!is_zero_bubble(plan.schedule)) return make_pipeline_schedule(plan.schedule, plan.pp, plan.vpp, plan.micro_batches());
  auto median = [&](auto pass_s) {
    std::vector<double> v;
    for (int64_t s = 0; s < plan.pp * plan.vpp; ++s) v.push_back(pass_s(static_cast<size_t>(s)));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return std::max(v[v.size() / 2], 1e-9);
  };
  ZeroBubbleCosts c;
  c.forward_s = median([&](size_t s) { return steps[s * 2].total(); });
  c.weight_grad_s = median([&](size_t s) { return weight_grads[s].total(); });
  c.input_grad_s = median([&](size_t s) { return steps[s * 2 + 1].total() - weight_grads[s].total(); });
  c.p2p_s = p2p_s;
  c.weight_retained = zero_bubble_weight_retained(model, plan);
  return make_zero_bubble_schedule(plan.schedule, plan.pp, plan.micro_batches(), c);
}

}  // namespace

Prediction predict_iteration(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                             const CostModel& cost, const SimulationOptions& options) {
  TRAINSIM_ASSERT(plan.gpus() == hardware.gpus, "the plan's GPU count must match the hardware");
  Prediction out;
  out.model = model;
  out.plan = plan;
  out.hardware = hardware;
  out.cost_model = cost.describe();

  const IterationWork work = lower_iteration(model, plan);
  const LayerScopes scopes = layer_scopes(plan, hardware.gpus_per_node);
  const std::vector<StepCost> step_costs = price_steps(work, plan.vpp, cost, scopes);
  const std::vector<StepCost> weight_grads =
      is_zero_bubble(plan.schedule) ? price_weight_grad_steps(work, plan.vpp, cost, scopes) : std::vector<StepCost>{};
  const GroupScope pp_scope = group_scope(plan, GroupKind::kPp, hardware.gpus_per_node);
  const GroupScope neighbours{2, pp_scope.intra_node() ? 2 : 1, pp_scope.intra_node() ? 1 : 2};
  const double p2p_s = plan.pp > 1 ? cost.collective_s(CollectiveKind::kSendRecv, work.stages[0].send_bytes, neighbours) : 0.0;
  const PipelineSchedule schedule = make_schedule(model, plan, step_costs, weight_grads, p2p_s);
  Builder b(plan, cost, work, schedule, group_scope(plan, GroupKind::kTp, hardware.gpus_per_node),
            dp_scopes(plan, hardware.gpus_per_node));
  b.bucket_params = options.dp_bucket_params;
  b.zero3_per_layer = zero3_calls(model, plan);
  b.p2p_s = p2p_s;
  const size_t vstages = static_cast<size_t>(b.virtual_stages()), m = static_cast<size_t>(schedule.micro_batches);
  b.forward.assign(vstages, std::vector<TaskId>(m, -1));
  b.forward_first = b.forward;
  b.backward_first = b.forward;
  b.backward_last = b.forward;
  b.reductions.assign(static_cast<size_t>(plan.pp), {});
  b.last_task.assign(static_cast<size_t>(plan.pp), -1);
  b.prefetch_point = b.last_task;
  b.step_costs = step_costs;
  b.weight_grad_costs = weight_grads;
  if (options.keep_trace) {
    std::vector<int32_t> layers_before;  // virtual stages are in model order
    int32_t before = 0;
    for (int64_t layers : virtual_stage_layers(model, plan)) {
      layers_before.push_back(before);
      before += static_cast<int32_t>(layers);
    }
    b.record.start(&out.trace.details, std::move(layers_before));
  }
  for (int64_t s = 0; s < plan.pp; ++s) b.add_compute(s);
  for (int64_t s = 0; s < plan.pp; ++s) b.add_transfers(s);
  for (int64_t s = 0; s < plan.pp; ++s) b.add_optimizer(s, b.last_task[static_cast<size_t>(s)]);
  std::vector<TaskTiming> timing = simulate(b.graph);

  time_iteration(b, timing, plan, out);

  const double tokens = static_cast<double>(plan.global_batch) * static_cast<double>(model.seq_len);
  const double gpus = static_cast<double>(plan.gpus());
  out.tokens_per_s = tokens / out.iteration_time_s;
  out.tokens_per_s_per_gpu = out.tokens_per_s / gpus;
  out.model_tflops_per_gpu = model_flops_per_iteration(model, plan.global_batch) / out.iteration_time_s / gpus / kFlopsPerTflop;
  out.hardware_tflops_per_gpu =
      hardware_flops_per_iteration(model, plan.global_batch, plan.recompute, full_recompute_layers(model, plan), plan.recompute_modules) / out.iteration_time_s / gpus / kFlopsPerTflop;
  const double peak_tflops = hardware.gpu.peak_flops_per_s(plan.precision) / kFlopsPerTflop;
  out.mfu = out.model_tflops_per_gpu / peak_tflops;
  out.hfu = out.hardware_tflops_per_gpu / peak_tflops;

  out.memory = work.memory;
  check_fit(hardware, cost, out);
  out.usd_per_iteration = out.iteration_time_s / 3600.0 * gpus * hardware.usd_per_gpu_hour;
  if (options.op_categories) out.op_categories = price_op_categories(work, plan, scopes, cost);
  if (options.keep_trace) {
    out.trace.graph = std::move(b.graph);
    out.trace.timing = std::move(timing);
    out.trace.streams_per_stage = kStreamsPerStage;
    out.trace.forward = summarize_layer_pass(work.layer.forward, cost, scopes);
    std::vector<Op> backward = work.layer.recompute;
    backward.insert(backward.end(), work.layer.backward.begin(), work.layer.backward.end());
    out.trace.backward = summarize_layer_pass(backward, cost, scopes);
    out.trace.layer_params = work.stages[0].params_per_layer;
  }
  return out;
}

}  // namespace trainsim
