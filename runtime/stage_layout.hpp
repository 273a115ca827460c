// Which part of the model a rank holds, which both backends build their stage from: the model
// chunks (layers) of its pipeline stage, embedding and LM head, and its TP, CP and EP ranks, from
// the simulator's split of layers into (virtual) stages (plan/stage_layers.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "model/activation_memory.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim::runtime {

struct StageLayout {
  // The model chunks this rank holds, in order: one unless the schedule is interleaved, where
  // chunk c is virtual stage c x pp + stage. Local layer indices run over the chunks in this order.
  std::vector<LayerRange> chunks;
  bool embedding = false, head = false;  // the first chunk embeds, the last one has the LM head

  int64_t tp = 1, tp_rank = 0;
  int64_t cp = 1, cp_rank = 0;  // cp > 1: this rank holds chunks cp_rank and 2cp - 1 - cp_rank of each sequence
  bool sequence_parallel = false;  // with CP, splits this rank's seq / cp rows of each micro-batch over TP
  int64_t ep = 1, ep_rank = 0;  // MoE: this rank holds experts ep_rank x experts / ep onwards (experts / ep of them)
  bool allgather_dispatch = false;  // MoE with ep > 1: the all-gather dispatcher instead of the all-to-all
  Recompute recompute = Recompute::kNone;  // full: keep only each layer's input; selective: drop the softmax

  int64_t layer_count() const;
  // The local index of chunk `chunk`'s first layer.
  int64_t first_local_layer(int64_t chunk) const;
  // The local index of model layer `layer`, or -1 when this rank does not hold it.
  int64_t local_layer(int64_t layer) const;
};

// The layout of pipeline stage `pp_rank`, TP rank `tp_rank`, CP rank `cp_rank`, EP rank `ep_rank`
// under `plan`: the simulator's split of layers into (virtual) stages, embedding on the first, LM
// head on the last.
StageLayout stage_layout(const ModelSpec& model, const ParallelPlan& plan, int64_t pp_rank, int64_t tp_rank, int64_t cp_rank = 0,
                         int64_t ep_rank = 0);

}  // namespace trainsim::runtime
