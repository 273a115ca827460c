// Closed-form iteration time; see screen.hpp and docs/simulator.md.
#include "sim/screen.hpp"

#include <algorithm>
#include <limits>
#include <cmath>

#include "plan/lowering.hpp"
#include "plan/rank_grid.hpp"
#include "plan/zero3_collectives.hpp"
#include "sim/device_memory.hpp"
#include "sim/step_cost.hpp"

namespace trainsim {

namespace {
// The part of 1F1B's fill-and-drain a Zero Bubble schedule still leaves idle: ZB-H1's bubble
// (p - 1)(F + B - W) and ZB-H2's (p - 1)(F + B - 2W) against 1F1B's (p - 1)(F + B + W) (Qi et al.
// 2024, Table 1), the automatic ZB-1p and ZB-2p being at least as good; 1 for other schedules.
// ZB-V (zero at F = B = W, the authors' comparison) is taken as ZB-H2's bubble in passes of half
// a stage: its chunks' F, B and W against 1F1B's whole-stage ones.
double zero_bubble_fill_fraction(const IterationWork& work, const ParallelPlan& plan, const CostModel& cost,
                                 const LayerScopes& scopes, const std::vector<StepCost>& steps) {
  if (!is_zero_bubble(plan.schedule)) return 1.0;
  const double w = price_weight_grad_steps(work, plan.vpp, cost, scopes)[0].total();
  const double f = steps[0].total(), b = steps[1].total() - w;
  const double k = plan.schedule == Schedule::kZeroBubble1p ? 1.0 : 2.0;
  const double stage_passes = plan.schedule == Schedule::kZeroBubbleV ? 2.0 : 1.0;
  return std::max(0.0, f + b - k * w) / std::max(stage_passes * (f + b + w), 1e-12);
}
// What the pipeline leaves exposed of the data-parallel collectives (the ZeRO-3 branch without a
// pipeline re-times `pipeline` itself: its gathers pace the steps).
struct StepTimes {
  double slowest, last_backward, micro_batches, first_forward;
};
double exposed_dp_s(const IterationWork& work, const ParallelPlan& plan, const CostModel& cost, const DpScopes& dp,
                    const StepTimes& t, const Zero3Calls& calls, double& pipeline) {
  const double m = t.micro_batches, slowest = t.slowest, last_backward = t.last_backward;
  const int64_t v = plan.vpp;
  const double params = work.stages[0].params, experts = work.stages[0].expert_params;
  const auto dp_s = [&](CollectiveKind kind, double share, double bytes_per_param) {
    return dp_collective_s(cost, kind, params * share, experts * share, bytes_per_param, dp);
  };
  double dp_exposed = 0;
  if (plan.dp * plan.cp > 1 && fsdp_layer_by_layer(plan)) {
    // FSDP layer by layer (the simulator's add_layered): each layer's gather issued as the layer
    // before starts, so a layer starts every max(c, g); each layer's reduce-scatter after its
    // backward, the last one exposed (and the ones the layers outpace).
    const double k = static_cast<double>(std::max<int64_t>(1, work.stages[0].chunk_layers[0]));
    const double share = 1.0 / (static_cast<double>(v) * k);
    const double g = calls.gathers_per_layer * dp_s(CollectiveKind::kAllGather, share / calls.gathers_per_layer, work.weight_bytes_per_param);
    const double r = calls.reduces_per_layer * dp_s(CollectiveKind::kReduceScatter, share / calls.reduces_per_layer, work.grad_bytes_per_param);
    const double f = t.first_forward / k, b = last_backward / k;
    const double reduce_tail = r + (k - 1.0) * std::max(0.0, r - std::max(b, g));
    if (keeps_gathered_weights(plan)) {
      // With a pipeline each chunk is gathered once, before its first forward (the first one
      // exposed), and reduce-scattered once after its last backward.
      dp_exposed = g + (k - 1.0) * std::max(0.0, g - f) + reduce_tail;
    } else {
      // Without a pipeline (one stage): forward and backward alternate, each step's first gather
      // issued as the step before starts its last layer.
      const double forward = (k - 1.0) * std::max(f, g) + f, backward = (k - 1.0) * std::max(b, g) + b;
      const double cycle = forward + backward + std::max(0.0, g - f) + std::max(0.0, g - b);
      pipeline = g + m * cycle - std::max(0.0, g - b);
      dp_exposed = reduce_tail + (m - 1.0) * std::max(0.0, k * r - cycle);
    }
  } else if (plan.dp * plan.cp > 1) {
    const CollectiveKind kind = plan.zero_stage == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter;
    const double per_chunk = params / static_cast<double>(v);
    const double buckets = plan.dp_overlap ? std::max(1.0, std::ceil(per_chunk / kDpBucketParams)) : 1.0;
    const double bucket = dp_s(kind, 1.0 / (static_cast<double>(v) * buckets), work.grad_bytes_per_param);
    if (plan.dp_overlap) {
      // One DP stream reduces each chunk's buckets as its last backward produces them (the
      // simulator splits that backward per bucket). With v interleaved chunks, stage 0 runs chunk
      // c's last backward c x p backward steps before the iteration's last (the cooldown runs the
      // last p micro-batches chunk by chunk, v - 1 first), so the earlier chunks' reductions
      // overlap the later chunks' backwards. Times relative to the end of the last backward; a
      // chunk's buckets are ready evenly over its last backward, each taking `bucket`.
      // (Other schedules with two chunks, ZB-V, are taken as if all finished with the last.)
      const bool interleaved = plan.schedule == Schedule::kInterleaved;
      double finish = -std::numeric_limits<double>::infinity();
      for (int64_t c = v - 1; c >= 0; --c) {
        const double end = interleaved ? -static_cast<double>(c * plan.pp) * last_backward : 0.0, first_ready = end - last_backward * (buckets - 1.0) / buckets;
        finish = std::max({finish + buckets * bucket, first_ready + buckets * bucket, end + bucket});
      }
      dp_exposed = std::max(0.0, finish);
    } else {
      dp_exposed = static_cast<double>(v) * buckets * bucket;
    }
    if (plan.zero_stage >= 1) {
      dp_exposed += dp_s(CollectiveKind::kAllGather, 1.0, work.weight_bytes_per_param);
    }
  }
  dp_exposed += replica_reduce_s(cost, params, experts, work.grad_bytes_per_param, dp);  // HSDP, after the last reduction
  return dp_exposed;
}
}  // namespace

ScreenEstimate screen_plan(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hw, const CostModel& cost) {
  const IterationWork work = lower_iteration(model, plan, memory_target(hw));
  const int64_t p = plan.pp, v = plan.vpp;
  const double m = static_cast<double>(plan.micro_batches());
  const LayerScopes scopes = layer_scopes(plan, hw.gpus_per_node);
  const std::vector<StepCost> steps = price_steps(work, v, cost, scopes);

  // Per stage: forward + backward of one micro-batch over all its chunks.
  double slowest = 0, sum = 0;
  for (int64_t s = 0; s < p; ++s) {
    double stage = 0;
    for (int64_t c = 0; c < v; ++c) {
      const size_t vs = static_cast<size_t>(virtual_stage_at(work.v_placement, p, s, c));
      stage += steps[vs * 2].total() + steps[vs * 2 + 1].total();
    }
    slowest = std::max(slowest, stage);
    sum += stage;
  }
  const double last_backward = steps[1].total();  // stage 0, chunk 0: the last backward of the iteration

  double p2p = 0;
  if (p > 1) {
    const GroupScope pp_scope = group_scope(plan, GroupKind::kPp, hw.gpus_per_node);
    const GroupScope neighbours{2, pp_scope.intra_node() ? 2 : 1, pp_scope.intra_node() ? 1 : 2};
    p2p = cost.collective_s(CollectiveKind::kSendRecv, work.stages[0].send_bytes, neighbours);
  }
  double pipeline = 0;
  // Steady state is paced by the slowest stage; filling and draining the pipeline costs the other
  // stages once (1F1B, GPipe), or 1/v of that with v interleaved chunks.
  pipeline = m * slowest + (sum - slowest) / static_cast<double>(plan.schedule == Schedule::kInterleaved ? v : 1) *
                               zero_bubble_fill_fraction(work, plan, cost, scopes, steps);
  pipeline += 2.0 * static_cast<double>(p - 1) * p2p * (work.v_placement ? 2.0 : 1.0);  // the V crosses the ranks twice

  const DpScopes dp = dp_scopes(plan, hw.gpus_per_node);
  const double dp_exposed = exposed_dp_s(work, plan, cost, dp, {slowest, last_backward, m, steps[0].total()}, zero3_calls(model, plan), pipeline);
  const double sharded = optimizer_params(work.stages[0].params, work.stages[0].expert_params, plan.zero_stage, dp);
  const double optimizer = cost.optimizer_s(sharded) + weight_cast_s(cost, work, work.stages[0]);

  ScreenEstimate out = screen_fit(work.memory, plan, hw);
  out.iteration_time_s = pipeline + dp_exposed + optimizer;
  return out;
}

ScreenEstimate screen_fit(const RankMemory& memory, const ParallelPlan& plan, const Hardware& hw) {
  ScreenEstimate out;
  out.memory_peak_stage = memory.peak_stage;
  out.memory_peak_bytes = memory.peak().memory.total_bytes();
  // As the simulator judges it: the tensors beside the context, workspace and NCCL buffers (the
  // allocator's reserve takes only the room left, so it never decides).
  out.device_used_bytes = device_memory(memory.peak().memory, plan, hw, 0.0).device_used_bytes;
  out.fits = out.device_used_bytes <= hw.gpu.memory_bytes;
  return out;
}

ScreenEstimate screen_fit(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hw) {
  return screen_fit(estimate_rank_memory(model, plan, memory_target(hw)), plan, hw);
}

}  // namespace trainsim
