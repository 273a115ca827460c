// Parameter counting; see docs/model-math.md §1 for the derivation of each term.
#include "model/param_count.hpp"

namespace trainsim {

int64_t ffn_params(const ModelSpec& m, int64_t ffn) {
  const int64_t h = m.hidden;
  const int64_t matrices = m.ffn_kind == FfnKind::kGelu ? 2 : 3;  // up, down (+ gate for SwiGLU)
  int64_t n = matrices * h * ffn;
  if (m.linear_bias) n += (matrices - 1) * ffn + h;  // biases on the ffn-wide outputs and on the down proj
  return n;
}

namespace {

int64_t attention_params(const ModelSpec& m) {
  const int64_t h = m.hidden, q = m.attention_width(), kv = m.kv_width();
  int64_t n = h * q + 2 * h * kv + q * h;  // W_q, W_k, W_v, W_o
  if (m.linear_bias) {
    n += q + 2 * kv + h;
  } else if (m.qkv_bias) {
    n += q + 2 * kv;
  }
  return n;
}

int64_t norm_params(const ModelSpec& m) { return m.norm == NormKind::kLayerNorm ? 2 * m.hidden : m.hidden; }

}  // namespace

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const int64_t h = m.hidden;
  c.per_layer.attention = attention_params(m);
  c.per_layer.norms = 2 * norm_params(m);
  int64_t mlp_active = 0;
  if (m.moe) {
    const int64_t expert = ffn_params(m, m.moe->expert_ffn_hidden);
    c.per_layer.mlp = m.moe->experts * expert;
    c.per_layer.shared = m.moe->shared_experts * expert;
    c.per_layer.router = h * m.moe->experts;
    mlp_active = (m.moe->top_k + m.moe->shared_experts) * expert;
  } else {
    c.per_layer.mlp = ffn_params(m, m.ffn_hidden);
    mlp_active = c.per_layer.mlp;
  }
  c.layers_total = c.per_layer.total() * m.layers;
  c.token_embedding = m.vocab * h;
  c.position_embedding = m.position == PositionKind::kLearned ? m.max_positions * h : 0;
  c.final_norm = norm_params(m);
  c.lm_head = m.tied_embeddings ? 0 : m.vocab * h;
  c.total = c.layers_total + c.token_embedding + c.position_embedding + c.final_norm + c.lm_head;

  const int64_t layer_active = c.per_layer.attention + c.per_layer.norms + c.per_layer.router + mlp_active;
  c.active_per_token = c.total - c.layers_total + layer_active * m.layers;

  const int64_t q = m.attention_width(), kv = m.kv_width();
  const int64_t attention_matmul = 2 * h * q + 2 * h * kv;
  const int64_t ffn_width = m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden;
  const int64_t ffn_matmul = (m.ffn_kind == FfnKind::kGelu ? 2 : 3) * h * ffn_width * (m.moe ? m.moe->top_k + m.moe->shared_experts : 1);
  const int64_t router_matmul = m.moe ? h * m.moe->experts : 0;
  c.matmul_active = m.layers * (attention_matmul + ffn_matmul + router_matmul) + m.vocab * h;
  return c;
}

}  // namespace trainsim
