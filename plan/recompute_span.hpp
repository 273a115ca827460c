// RecomputeSpan: which transformer layers of a model chunk the plan's recomputation covers, and
// what the chunk keeps for the backward, as counts of layers. Full recomputation follows
// Megatron-Core's --recompute-method / --recompute-num-layers (megatron/core/recompute.py
// checkpointed_forward, before May 2026 TransformerBlock._checkpointed_forward), which runs once
// per TransformerBlock, i.e. per model chunk; none, selective and selective_op treat every layer
// alike. Bytes and seconds are not here: plan/rank_memory.cpp and sim/step_cost.cpp price the counts.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

struct RecomputeSpan {
  // Layers whose recomputation (LayerWork::recompute) runs before their backward.
  int64_t recomputed_layers = 0;
  // Stored per micro-batch at activation_bytes_per_layer of the plan's recompute: one per layer,
  // with uniform N one per group of N layers (full recompute keeps only each group's input).
  int64_t checkpointed = 0;
  // Layers keeping every activation as without recomputation (block: the layers after the first N).
  int64_t whole_layers = 0;
  // Layers one recomputation rebuilds at once, live together during the backward (uniform: N).
  int64_t group_layers = 0;
  // Summing the chunks of a stage: the counts add, the group is the largest.
  RecomputeSpan& operator+=(const RecomputeSpan& other);
};

// Full recomputation other than every layer alone (block N, or uniform N > 1).
bool is_partial_recompute(const ParallelPlan& plan);

// One model chunk of `chunk_layers` layers.
RecomputeSpan chunk_recompute_span(const ParallelPlan& plan, int64_t chunk_layers);
// Pipeline stage `stage`: its vpp chunks summed.
RecomputeSpan stage_recompute_span(const ModelSpec& model, const ParallelPlan& plan, int64_t stage);
// Layers of the whole model whose forward full recomputation runs again (hardware FLOPs).
int64_t full_recompute_layers(const ModelSpec& model, const ParallelPlan& plan);

// "full", "full (block 2)", "full (uniform 4)", "selective", ... for reports.
std::string describe_recompute(const ParallelPlan& plan);

}  // namespace trainsim
