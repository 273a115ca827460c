// The iteration's task graph, step by step (sim/iteration_graph.hpp).
#include "sim/iteration_graph.hpp"

#include <cmath>

#include "plan/zero_bubble_schedule.hpp"

namespace trainsim::iteration_graph {

void Builder::add_reductions(int64_t stage, const std::vector<TaskId>& ready) {
  const double share = 1.0 / static_cast<double>(ready.size());
  const CollectiveKind kind = plan.zero_stage == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter;
  for (TaskId r : ready) {
    const TaskId id = add(stage, kDpReduce, chunk_dp_s(kind, stage, share, work.grad_bytes_per_param), TaskCategory::kDpReduce, 0);
    graph.add_dep(id, r);
    record.bytes(id, chunk_params(stage) * share * work.grad_bytes_per_param);
    reductions[static_cast<size_t>(stage)].push_back(id);
  }
}

void Builder::add_compute(int64_t stage) {
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

Builder::LayeredStep Builder::add_layered(int64_t stage, const PipelineStep& step, const StepCost& c, bool gather, bool reduce, TaskCategory category) {
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

void Builder::describe_layered(int64_t vs, bool backward, const LayeredStep& l, int64_t k, const StepCost& one, double period, double g, double r) {
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

void Builder::add_backward(int64_t stage, const PipelineStep& step, bool gather) {
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

void Builder::link(int64_t stage, TaskId from, TaskId to, int64_t to_vs, TaskCategory category, int64_t micro_batch) {
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

void Builder::add_transfers(int64_t stage) {
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

void Builder::add_optimizer(int64_t stage, TaskId last_compute) {
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

}  // namespace trainsim::iteration_graph
