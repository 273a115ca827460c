// Per-op-category prices of one iteration, per pipeline stage (see the header).
#include "sim/op_category_times.hpp"

#include <algorithm>

namespace trainsim {

namespace {

// Adds `times` x the price of each op to its category; an overlapped collective counts only its
// part longer than the op it overlaps (as price_ops does).
void add_ops(std::array<double, kOpCategoryCount>& out, const std::vector<Op>& ops, double times, const CostModel& cost,
             const LayerScopes& scopes) {
  for (const Op& op : ops) {
    double t = cost.op_s(op, scopes.of(op.group));
    if (op.kind == OpKind::kCollective && op.overlaps_op >= 0) {
      const Op& hidden_by = ops[static_cast<size_t>(op.overlaps_op)];
      t = overlapped_collective_s(op, t, cost.op_s(hidden_by, scopes.of(hidden_by.group)), cost.sm_count());
    }
    out[static_cast<size_t>(op_category_of(op.name))] += times * t;
  }
}

}  // namespace

std::vector<OpCategoryTimes> price_op_categories(const IterationWork& work, const ParallelPlan& plan, const LayerScopes& scopes,
                                                 const CostModel& cost) {
  const double micro_batches = static_cast<double>(plan.micro_batches());
  std::vector<OpCategoryTimes> out;
  for (const StageWork& stage : work.stages) {
    OpCategoryTimes t;
    // An MoE model's dense first layers take their own ops (the first of their chunks: block
    // recompute reaches them first).
    int64_t dense = 0, dense_recomputed = 0, recomputed = 0;  // block recompute: the first N layers of each chunk
    for (size_t c = 0; c < stage.chunk_recomputed_layers.size(); ++c) {
      const int64_t d = work.dense_layer.forward.empty() ? 0 : stage.chunk_dense_layers[c];
      dense += d;
      dense_recomputed += std::min(d, stage.chunk_recomputed_layers[c]);
      recomputed += stage.chunk_recomputed_layers[c];
    }
    const double layer_passes = static_cast<double>(stage.layers - dense) * micro_batches;
    add_ops(t.forward_s, work.layer.forward, layer_passes, cost, scopes);
    add_ops(t.backward_s, work.layer.backward, layer_passes, cost, scopes);
    add_ops(t.backward_s, work.layer.recompute, static_cast<double>(recomputed - dense_recomputed) * micro_batches, cost, scopes);
    if (dense > 0) {
      add_ops(t.forward_s, work.dense_layer.forward, static_cast<double>(dense) * micro_batches, cost, scopes);
      add_ops(t.backward_s, work.dense_layer.backward, static_cast<double>(dense) * micro_batches, cost, scopes);
      add_ops(t.backward_s, work.dense_layer.recompute, static_cast<double>(dense_recomputed) * micro_batches, cost, scopes);
    }
    for (const auto* ops : {&stage.embedding_forward, &stage.head_forward}) add_ops(t.forward_s, *ops, micro_batches, cost, scopes);
    for (const auto* ops : {&stage.embedding_backward, &stage.head_backward}) add_ops(t.backward_s, *ops, micro_batches, cost, scopes);
    const double chunk_passes = static_cast<double>(std::count_if(stage.chunk_layers.begin(), stage.chunk_layers.end(),
                                                                  [](int64_t layers) { return layers > 0; })) * micro_batches;
    add_ops(t.forward_s, work.chunk_forward, chunk_passes, cost, scopes);
    add_ops(t.backward_s, work.chunk_backward, chunk_passes, cost, scopes);
    t.forward_s[static_cast<size_t>(OpCategory::kFp8Cast)] += weight_cast_s(cost, work, stage);
    const double sharded = stage.params / (plan.zero_stage >= 1 ? static_cast<double>(plan.dp * plan.cp) : 1.0);
    t.forward_s[static_cast<size_t>(OpCategory::kOptimizer)] = cost.optimizer_s(sharded);
    out.push_back(t);
  }
  return out;
}

}  // namespace trainsim
