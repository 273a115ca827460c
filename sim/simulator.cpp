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
#include "sim/iteration_graph.hpp"
#include "sim/op_category_times.hpp"
#include "sim/step_cost.hpp"

namespace trainsim {

namespace {

using iteration_graph::Builder;
using iteration_graph::kCompute;
using iteration_graph::kStreamsPerStage;

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
      out.host_idle_s += b.parts[i].host_idle_s;
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

  IterationWork work = lower_iteration(model, plan, memory_target(hardware));
  if (work.offloaded_layers > 0) {
    const double link = hardware.gpu.capabilities.host_link_bytes_per_s;
    if (link <= 0) {
      throw InputError("cpu_offload_layers " + std::to_string(plan.cpu_offload_layers) + ": GPU \"" + hardware.gpu.name +
                           "\" states no host link bandwidth (capabilities.host_link_gb_per_s_per_direction), so the copies cannot be priced",
                       "add host_link_gb_per_s_per_direction to the GPU's capabilities (PCIe Gen5 x16 measures ~55 GB/s)");
    }
    work.offload_copy_s = work.offloaded_layer_bytes / link;
  }
  out.layer_ops_forward = static_cast<int64_t>(work.layer.forward.size());
  out.layer_ops_backward = static_cast<int64_t>(work.layer.backward.size());
  out.layer_ops_recompute = static_cast<int64_t>(work.layer.recompute.size());
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
  {
    // Each step is a compute task and mostly a transfer, with about three dependencies: reserved
    // up front, the graph of a deep pipeline is not copied as it grows.
    size_t steps = 0;
    for (const auto& stage : schedule.steps) steps += stage.size();
    b.graph.reserve(2 * steps + 64, 3 * steps + 64);
    b.parts.reserve(2 * steps + 64);
  }
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
