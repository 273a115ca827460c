// Exact parameter counts of a ModelSpec, by component. Formulas in docs/model-math.md §1;
// checked against published counts (GPT-2 124M = 124,439,808; Llama-3-8B = 8,030,261,248).
#pragma once

#include <cstdint>

#include "model/model_spec.hpp"

namespace trainsim {

struct LayerParams {
  int64_t attention = 0;  // Q, K, V, output projection (+ biases); MLA: its five projections and two norms
  // Part of `attention` whole on every TP rank: MLA's down projections and latent norms (Megatron-Core
  // builds linear_q_down_proj and linear_kv_down_proj duplicated, not split over TP).
  int64_t attention_replicated = 0;
  int64_t mlp = 0;        // dense FFN, or all routed experts of an MoE layer
  int64_t shared = 0;     // MoE: the shared experts every token passes through (a dense FFN)
  int64_t router = 0;     // MoE gate (hidden x experts)
  int64_t norms = 0;      // the two norms of a pre-norm block
  int64_t total() const { return attention + mlp + shared + router + norms; }
};

struct ParamCounts {
  LayerParams per_layer;          // one transformer block (MoE models: an MoE one)
  LayerParams dense_layer;        // MoE models with dense first layers: one of those (else zeros)
  int64_t layers_total = 0;       // per_layer.total() * MoE layers + dense_layer.total() * dense layers
  int64_t token_embedding = 0;    // vocab x hidden
  int64_t position_embedding = 0; // learned positions only
  int64_t final_norm = 0;
  int64_t lm_head = 0;            // 0 when tied to the token embedding
  // Multi-token prediction (ModelSpec::mtp_layers): per depth a transformer layer of the model's
  // last kind, eh_proj (2h x h, no bias) and its three norms (enorm, hnorm, final); the embedding
  // and LM head are the model's. Outside `total`, as the sources state model sizes.
  int64_t mtp_per_depth = 0;
  int64_t mtp = 0;
  int64_t total = 0;
  int64_t active_per_token = 0;   // MoE: only top_k experts count (== total for dense models)
  // Parameters whose weights take part in GEMMs (every linear layer, the LM head even when tied,
  // not the embedding lookups, norms or biases): the N in "6N" FLOPs per token.
  int64_t matmul_active = 0;
  // The multi-token-prediction depths' GEMM weights a token passes through: each depth's layer
  // (its top-k and shared experts), eh_proj and the LM head again. Not in matmul_active.
  int64_t mtp_matmul_active = 0;
};

ParamCounts count_params(const ModelSpec& model);

// Parameters of one dense FFN / one expert of width `ffn` (weights and biases).
int64_t ffn_params(const ModelSpec& model, int64_t ffn);

// Weights of the attention block's GEMMs (every projection; MLA's five), no biases or norms.
int64_t attention_matmul_params(const ModelSpec& model);

}  // namespace trainsim
