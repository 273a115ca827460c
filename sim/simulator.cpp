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
#include "sim/step_cost.hpp"

namespace trainsim {

namespace {

constexpr int32_t kStreamsPerStage = 5;
enum Stream : int32_t { kCompute = 0, kSendNext = 1, kSendPrev = 2, kDpReduce = 3, kDpGather = 4 };

struct Builder {
  Builder(const ParallelPlan& p, const CostModel& c, const IterationWork& w, const PipelineSchedule& sch, GroupScope tp,
          GroupScope dp)
      : plan(p), cost(c), work(w), schedule(sch), tp_scope(tp), dp_scope(dp) {}
  const ParallelPlan& plan;
  const CostModel& cost;
  const IterationWork& work;
  const PipelineSchedule& schedule;
  GroupScope tp_scope, dp_scope;
  double p2p_s = 0;
  double bucket_params = 40e6;
  TaskGraph graph;
  std::vector<StepCost> parts;  // compute/TP split of each task (zero for non-compute tasks)
  std::vector<std::vector<TaskId>> forward, backward_first, backward_last;  // [virtual stage][micro-batch]
  std::vector<std::vector<TaskId>> reductions;                                // [stage]

  int64_t virtual_stages() const { return schedule.stages * schedule.chunks; }

  TaskId add(int64_t stage, Stream stream, double seconds, TaskCategory category, int64_t label, StepCost part = {}) {
    const TaskId id = graph.add(static_cast<int32_t>(stage * kStreamsPerStage + stream), seconds,
                                static_cast<int32_t>(category), static_cast<int32_t>(label));
    parts.push_back(part);
    return id;
  }

  std::vector<StepCost> step_costs;  // [virtual stage * 2 + backward], priced once

  StepCost step_cost(int64_t vs, bool backward) const { return step_costs[static_cast<size_t>(vs * 2 + (backward ? 1 : 0))]; }

  double chunk_params(int64_t stage) const {
    return work.stages[static_cast<size_t>(stage)].params / static_cast<double>(schedule.chunks);
  }

  double gather_s(int64_t stage) const {
    // nccl-tests convention: the buffer is the whole gathered output (every shard).
    return cost.collective_s(CollectiveKind::kAllGather, chunk_params(stage) * work.weight_bytes_per_param, dp_scope);
  }

  // Gradient reduction of one chunk's parameters in buckets; each bucket waits on `ready[i]`.
  void add_reductions(int64_t stage, const std::vector<TaskId>& ready) {
    const double params = chunk_params(stage) / static_cast<double>(ready.size());
    const CollectiveKind kind = plan.zero_stage == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter;
    for (TaskId r : ready) {
      const double bytes = params * work.grad_bytes_per_param;
      const TaskId id = add(stage, kDpReduce, cost.collective_s(kind, bytes, dp_scope), TaskCategory::kDpReduce, 0);
      graph.add_dep(id, r);
      reductions[static_cast<size_t>(stage)].push_back(id);
    }
  }

  void add_compute(int64_t stage) {
    const int64_t m = schedule.micro_batches;
    const bool zero3 = plan.zero_stage >= 3 && plan.dp * plan.cp > 1;
    const bool bucketed = plan.dp * plan.cp > 1 && !zero3;
    for (const PipelineStep& step : schedule.steps[static_cast<size_t>(stage)]) {
      const int64_t vs = schedule.virtual_stage(stage, step.chunk);
      const size_t v = static_cast<size_t>(vs), mb = static_cast<size_t>(step.micro_batch);
      const bool backward = step.kind == StepKind::kBackward;
      TaskId gather = -1;
      if (zero3) gather = add(stage, kDpGather, gather_s(stage), TaskCategory::kDpGather, step.micro_batch);
      const StepCost c = step_cost(vs, backward);
      if (!backward) {
        forward[v][mb] = add(stage, kCompute, c.total(), TaskCategory::kForward, step.micro_batch, c);
        if (gather >= 0) graph.add_dep(forward[v][mb], gather);
        continue;
      }
      // The last micro-batch's backward is split per gradient bucket so reductions can overlap it.
      const bool split = bucketed && plan.dp_overlap && step.micro_batch == m - 1;
      const int64_t pieces = split ? std::max<int64_t>(1, static_cast<int64_t>(std::ceil(chunk_params(stage) / bucket_params))) : 1;
      std::vector<TaskId> ids;
      for (int64_t i = 0; i < pieces; ++i) {
        const StepCost piece = c.scaled(1.0 / static_cast<double>(pieces));
        ids.push_back(add(stage, kCompute, piece.total(), TaskCategory::kBackward, step.micro_batch, piece));
      }
      backward_first[v][mb] = ids.front();
      backward_last[v][mb] = ids.back();
      graph.add_dep(ids.front(), forward[v][mb]);
      if (gather >= 0) graph.add_dep(ids.front(), gather);
      if (split) add_reductions(stage, ids);
      if (zero3) {
        // FSDP reduce-scatters each micro-batch's gradients.
        const double bytes = chunk_params(stage) * work.grad_bytes_per_param;
        const TaskId rs = add(stage, kDpReduce, cost.collective_s(CollectiveKind::kReduceScatter, bytes, dp_scope),
                              TaskCategory::kDpReduce, step.micro_batch);
        graph.add_dep(rs, ids.back());
        reductions[static_cast<size_t>(stage)].push_back(rs);
      }
    }
  }

  void add_transfers(int64_t stage) {
    const int64_t last = virtual_stages() - 1;
    for (const PipelineStep& step : schedule.steps[static_cast<size_t>(stage)]) {
      const int64_t vs = schedule.virtual_stage(stage, step.chunk);
      const size_t mb = static_cast<size_t>(step.micro_batch);
      if (step.kind == StepKind::kForward && vs < last) {
        const TaskId t = add(stage, kSendNext, p2p_s, TaskCategory::kSendForward, step.micro_batch);
        graph.add_dep(t, forward[static_cast<size_t>(vs)][mb]);
        graph.add_dep(forward[static_cast<size_t>(vs + 1)][mb], t);
      } else if (step.kind == StepKind::kBackward && vs > 0) {
        const TaskId t = add(stage, kSendPrev, p2p_s, TaskCategory::kSendBackward, step.micro_batch);
        graph.add_dep(t, backward_last[static_cast<size_t>(vs)][mb]);
        graph.add_dep(backward_first[static_cast<size_t>(vs - 1)][mb], t);
      }
    }
  }

  void add_optimizer(int64_t stage, TaskId last_compute) {
    if (plan.dp * plan.cp > 1 && plan.zero_stage < 3 && !plan.dp_overlap) {
      for (int64_t c = 0; c < schedule.chunks; ++c) add_reductions(stage, {last_compute});
    }
    const double sharded = work.stages[static_cast<size_t>(stage)].params / (plan.zero_stage >= 1 ? static_cast<double>(plan.dp * plan.cp) : 1.0);
    const TaskId opt = add(stage, kCompute, cost.optimizer_s(sharded), TaskCategory::kOptimizer, 0);
    for (TaskId r : reductions[static_cast<size_t>(stage)]) graph.add_dep(opt, r);
    if (plan.dp * plan.cp > 1 && (plan.zero_stage == 1 || plan.zero_stage == 2)) {
      // The distributed optimizer all-gathers the updated 16-bit weights.
      const double bytes = work.stages[static_cast<size_t>(stage)].params * work.weight_bytes_per_param;
      const TaskId gather = add(stage, kDpGather, cost.collective_s(CollectiveKind::kAllGather, bytes, dp_scope),
                                TaskCategory::kDpGather, 0);
      graph.add_dep(gather, opt);
    }
  }
};

// Splits the critical stage's timeline into the breakdown's parts (they sum to its end time).
Breakdown attribute(const Builder& b, const std::vector<TaskTiming>& timing, int64_t stage, double iteration_s) {
  Breakdown out;
  const auto& tasks = b.graph.tasks();
  double cursor = 0.0;
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
    }
    cursor = timing[i].end_s;
  }
  out.dp_comm_exposed_s += stage_end - cursor;  // the weight all-gather after the optimizer
  out.bubble_s += iteration_s - stage_end;      // waiting for a slower stage
  return out;
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
  const PipelineSchedule schedule = make_pipeline_schedule(plan.schedule, plan.pp, plan.vpp, plan.micro_batches());
  Builder b(plan, cost, work, schedule, group_scope(plan, GroupKind::kTp, hardware.gpus_per_node),
            group_scope(plan, GroupKind::kDpCp, hardware.gpus_per_node));
  b.bucket_params = options.dp_bucket_params;
  const GroupScope pp_scope = group_scope(plan, GroupKind::kPp, hardware.gpus_per_node);
  GroupScope neighbours{2, pp_scope.intra_node() ? 2 : 1, pp_scope.intra_node() ? 1 : 2};
  b.p2p_s = plan.pp > 1 ? cost.collective_s(CollectiveKind::kSendRecv, work.stages[0].send_bytes, neighbours) : 0.0;
  const size_t vstages = static_cast<size_t>(b.virtual_stages()), m = static_cast<size_t>(schedule.micro_batches);
  b.forward.assign(vstages, std::vector<TaskId>(m, -1));
  b.backward_first = b.forward;
  b.backward_last = b.forward;
  b.reductions.assign(static_cast<size_t>(plan.pp), {});
  b.step_costs = price_steps(work, schedule.chunks, cost, layer_scopes(plan, hardware.gpus_per_node));
  for (int64_t s = 0; s < plan.pp; ++s) b.add_compute(s);
  for (int64_t s = 0; s < plan.pp; ++s) b.add_transfers(s);
  for (int64_t s = 0; s < plan.pp; ++s) {
    const auto& steps = schedule.steps[static_cast<size_t>(s)];
    const PipelineStep& last = steps.back();
    b.add_optimizer(s, b.backward_last[static_cast<size_t>(schedule.virtual_stage(s, last.chunk))][static_cast<size_t>(last.micro_batch)]);
  }
  std::vector<TaskTiming> timing = simulate(b.graph);

  std::vector<double> stage_end(static_cast<size_t>(plan.pp), 0.0);
  for (size_t i = 0; i < timing.size(); ++i) {
    const size_t stage = static_cast<size_t>(b.graph.tasks()[i].stream / kStreamsPerStage);
    stage_end[stage] = std::max(stage_end[stage], timing[i].end_s);
  }
  out.critical_stage = std::max_element(stage_end.begin(), stage_end.end()) - stage_end.begin();
  out.iteration_time_s = stage_end[static_cast<size_t>(out.critical_stage)];
  out.breakdown = attribute(b, timing, out.critical_stage, out.iteration_time_s);

  const double tokens = static_cast<double>(plan.global_batch) * static_cast<double>(model.seq_len);
  const double gpus = static_cast<double>(plan.gpus());
  out.tokens_per_s = tokens / out.iteration_time_s;
  out.tokens_per_s_per_gpu = out.tokens_per_s / gpus;
  out.model_tflops_per_gpu = model_flops_per_iteration(model, plan.global_batch) / out.iteration_time_s / gpus / kFlopsPerTflop;
  out.hardware_tflops_per_gpu =
      hardware_flops_per_iteration(model, plan.global_batch, plan.recompute) / out.iteration_time_s / gpus / kFlopsPerTflop;
  const double peak_tflops = hardware.gpu.peak_flops_per_s(plan.precision) / kFlopsPerTflop;
  out.mfu = out.model_tflops_per_gpu / peak_tflops;
  out.hfu = out.hardware_tflops_per_gpu / peak_tflops;

  out.memory = work.memory;
  out.memory_capacity_gib = bytes_to_gib(hardware.gpu.memory_bytes);
  const double peak_gib = bytes_to_gib(out.memory.peak().memory.total_bytes());
  if (peak_gib > out.memory_capacity_gib) {
    out.fits = false;
    char reason[160];
    std::snprintf(reason, sizeof reason, "needs %.1f GiB on pipeline stage %lld, the GPU has %.1f GiB", peak_gib,
                  static_cast<long long>(out.memory.peak_stage), out.memory_capacity_gib);
    out.infeasible_reason = reason;
  }
  out.usd_per_iteration = out.iteration_time_s / 3600.0 * gpus * hardware.usd_per_gpu_hour;
  if (options.keep_trace) {
    out.trace.graph = std::move(b.graph);
    out.trace.timing = std::move(timing);
    out.trace.streams_per_stage = kStreamsPerStage;
  }
  return out;
}

}  // namespace trainsim
