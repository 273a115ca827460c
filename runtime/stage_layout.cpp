// runtime/stage_layout.hpp: which layers (model chunks) a pipeline rank holds, its TP, CP and EP
// coordinates. The layer split is the simulator's (plan/parallel_plan's layers_of_chunk).
#include "runtime/stage_layout.hpp"

namespace trainsim::runtime {

int64_t StageLayout::layer_count() const {
  int64_t n = 0;
  for (const LayerRange& c : chunks) n += c.size();
  return n;
}

int64_t StageLayout::first_local_layer(int64_t chunk) const {
  int64_t n = 0;
  for (int64_t c = 0; c < chunk; ++c) n += chunks[static_cast<size_t>(c)].size();
  return n;
}

int64_t StageLayout::local_layer(int64_t layer) const {
  int64_t n = 0;
  for (const LayerRange& c : chunks) {
    if (layer >= c.first && layer < c.last) return n + layer - c.first;
    n += c.size();
  }
  return -1;
}

StageLayout stage_layout(const ModelSpec& model, const ParallelPlan& plan, int64_t pp_rank, int64_t tp_rank, int64_t cp_rank,
                         int64_t ep_rank) {
  StageLayout layout;
  const int64_t chunks = plan.schedule == Schedule::kInterleaved ? plan.vpp : 1;
  for (int64_t c = 0; c < chunks; ++c) layout.chunks.push_back(layers_of_chunk(model, plan, pp_rank, c));
  layout.embedding = pp_rank == 0;
  layout.head = pp_rank == plan.pp - 1;
  layout.tp = plan.tp;
  layout.tp_rank = tp_rank;
  layout.cp = plan.cp;
  layout.cp_rank = cp_rank;
  layout.ep = plan.ep;
  layout.ep_rank = ep_rank;
  layout.allgather_dispatch = plan.ep > 1 && plan.moe_dispatcher == MoeDispatcher::kAllGather;
  layout.sequence_parallel = plan.sequence_parallel;
  layout.recompute = plan.recompute;
  return layout;
}

}  // namespace trainsim::runtime
