// Training FLOPs per token and per iteration. Model FLOPs count forward + backward (3x the
// forward) and are the basis of MFU; hardware FLOPs add what activation recomputation runs again
// (the basis of HFU). Derivation in docs/model-math.md §2 (Narayanan et al. 2021 eq. 3,
// Korthikanti et al. 2022 §6), tested against both papers.
#pragma once

#include <cstdint>

#include "model/model_spec.hpp"
#include "model/plan_knobs.hpp"  // Recompute, RecomputeModules

namespace trainsim {

struct FlopsPerToken {
  double forward_matmul = 0;     // 2 x matmul parameters, LM head included
  double forward_attention = 0;  // QK^T and AV: 4 s (heads*head_dim) per layer, no causal discount
  double forward_lm_head = 0;    // part of forward_matmul: 2 vocab hidden
  double forward() const { return forward_matmul + forward_attention; }
  double model = 0;     // 3 x forward
  double hardware = 0;  // model + the recomputed forward work
};

FlopsPerToken flops_per_token(const ModelSpec& model, Recompute recompute);
// Full recompute of `recomputed_layers` of the model's layers only (Megatron-Core's block method:
// plan/recompute_span.hpp counts them); other recompute modes cover every layer and ignore it.
// With selective recomputation `modules` says what it re-runs (Megatron-Core's --recompute-modules).
FlopsPerToken flops_per_token(const ModelSpec& model, Recompute recompute, int64_t recomputed_layers,
                              RecomputeModules modules = kDefaultRecomputeModules);

// Per iteration: per token x global_batch x seq_len.
double model_flops_per_iteration(const ModelSpec& model, int64_t global_batch);
double hardware_flops_per_iteration(const ModelSpec& model, int64_t global_batch, Recompute recompute);
double hardware_flops_per_iteration(const ModelSpec& model, int64_t global_batch, Recompute recompute, int64_t recomputed_layers,
                                    RecomputeModules modules = kDefaultRecomputeModules);

}  // namespace trainsim
