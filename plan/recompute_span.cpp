// Layer counts of recomputation per model chunk; docs/model-math.md §3 "Partial full recomputation"
// gives the rules and the Megatron-Core source they follow.
#include "plan/recompute_span.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace trainsim {

RecomputeSpan& RecomputeSpan::operator+=(const RecomputeSpan& other) {
  recomputed_layers += other.recomputed_layers;
  checkpointed += other.checkpointed;
  whole_layers += other.whole_layers;
  group_layers = std::max(group_layers, other.group_layers);
  return *this;
}

bool is_partial_recompute(const ParallelPlan& p) {
  return p.recompute == Recompute::kFull && (p.recompute_method != RecomputeMethod::kUniform || p.recompute_layers != 1);
}

RecomputeSpan chunk_recompute_span(const ParallelPlan& p, int64_t layers) {
  RecomputeSpan span;
  if (layers <= 0) return span;
  if (p.recompute == Recompute::kNone) {
    span.checkpointed = layers;  // every activation, at the size of recompute none
    return span;
  }
  if (p.recompute != Recompute::kFull) {  // selective, selective_op: each layer recomputes its part alone
    span.recomputed_layers = span.checkpointed = layers;
    span.group_layers = 1;
    return span;
  }
  const int64_t n = p.recompute_layers;
  if (p.recompute_method == RecomputeMethod::kBlock) {
    // checkpointed_forward, method "block": layer i of the chunk is checkpointed when i < N.
    span.recomputed_layers = span.checkpointed = std::min(n, layers);
    span.whole_layers = layers - span.recomputed_layers;
    span.group_layers = span.recomputed_layers > 0 ? 1 : 0;
    return span;
  }
  if (p.recompute_method == RecomputeMethod::kEvery) {
    // torchtitan's _apply_layer_sac (before pytorch/torchtitan#2357): counting the blocks it wraps
    // from 1, block i is checkpointed whole when i % N == 0; the others keep every activation.
    // Counted per chunk here (torchtitan's count runs on over the chunks of an interleaved rank).
    span.recomputed_layers = span.checkpointed = layers / n;
    span.whole_layers = layers - span.recomputed_layers;
    span.group_layers = span.recomputed_layers > 0 ? 1 : 0;
    return span;
  }
  // Method "uniform": checkpoints [i, min(i + N, layers)) for i = 0, N, 2N, ...: ceil(layers / N)
  // group inputs kept, every layer recomputed, one group's activations rebuilt at a time.
  span.recomputed_layers = layers;
  span.checkpointed = layers / n + (layers % n != 0 ? 1 : 0);
  span.group_layers = std::min(n, layers);
  return span;
}

RecomputeSpan stage_recompute_span(const ModelSpec& m, const ParallelPlan& p, int64_t stage) {
  const std::vector<int64_t> layers = virtual_stage_layers(m, p);
  RecomputeSpan span;
  for (int64_t c = 0; c < p.vpp; ++c) span += chunk_recompute_span(p, layers[static_cast<size_t>(virtual_stage_at(v_placement(p.schedule), p.pp, stage, c))]);
  return span;
}

int64_t full_recompute_layers(const ModelSpec& m, const ParallelPlan& p) {
  if (p.recompute != Recompute::kFull) return 0;
  int64_t out = 0;
  for (int64_t layers : virtual_stage_layers(m, p)) out += chunk_recompute_span(p, layers).recomputed_layers;
  return out;
}

std::string describe_recompute(const ParallelPlan& p) {
  std::string out = to_string(p.recompute);
  if (is_partial_recompute(p)) out += std::string(" (") + to_string(p.recompute_method) + " " + std::to_string(p.recompute_layers) + ")";
  if (p.recompute == Recompute::kSelective && p.recompute_modules != kDefaultRecomputeModules) {
    out += " (" + (p.recompute_modules == 0 ? std::string("no module") : recompute_modules_text(p.recompute_modules)) + ")";
  }
  return out;
}

}  // namespace trainsim
