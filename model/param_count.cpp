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

int64_t attention_matmul_params(const ModelSpec& m) {
  const int64_t h = m.hidden;
  if (!m.mla) return 2 * h * m.attention_width() + 2 * h * m.kv_width();
  // Megatron-Core MLASelfAttention: linear_q_down_proj (h x q_lora_rank) and linear_q_up_proj
  // (q_lora_rank x heads (nope + rope)), or linear_q_proj (h x heads (nope + rope)) without Q
  // compression; linear_kv_down_proj (h x (kv_lora_rank + rope)); linear_kv_up_proj (kv_lora_rank x
  // heads (nope + v)); linear_proj (heads v x h). DeepSeek-V3: 187,105,280.
  const MlaSpec& a = *m.mla;
  const int64_t q_heads = m.heads * a.qk_head_dim();
  const int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * q_heads : h * q_heads;
  const int64_t kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + m.attention_width() * h;
}

namespace {

// MLA's replicated part: the down projections and the RMSNorms on the latents (weights only).
int64_t mla_replicated_params(const ModelSpec& m) {
  if (!m.mla) return 0;
  const MlaSpec& a = *m.mla;
  const int64_t q = a.q_lora_rank > 0 ? m.hidden * a.q_lora_rank + a.q_lora_rank : 0;
  return q + m.hidden * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
}

int64_t attention_params(const ModelSpec& m) {
  if (m.mla) return attention_matmul_params(m) + (m.mla->q_lora_rank > 0 ? m.mla->q_lora_rank : 0) + m.mla->kv_lora_rank;
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
  c.per_layer.attention_replicated = mla_replicated_params(m);
  c.per_layer.norms = 2 * norm_params(m);
  int64_t mlp_active = 0;
  const int64_t dense_layers = m.moe ? m.moe->dense_layers : 0;
  if (m.moe) {
    const int64_t expert = ffn_params(m, m.moe->expert_ffn_hidden);
    c.per_layer.mlp = m.moe->experts * expert;
    c.per_layer.shared = m.moe->shared_experts * expert;
    c.per_layer.router = h * m.moe->experts;
    mlp_active = (m.moe->top_k + m.moe->shared_experts) * expert;
    if (dense_layers > 0) {
      c.dense_layer = c.per_layer;
      c.dense_layer.mlp = ffn_params(m, m.ffn_hidden);
      c.dense_layer.shared = c.dense_layer.router = 0;
    }
  } else {
    c.per_layer.mlp = ffn_params(m, m.ffn_hidden);
    mlp_active = c.per_layer.mlp;
  }
  const int64_t sparse_layers = m.layers - dense_layers;
  c.layers_total = c.per_layer.total() * sparse_layers + c.dense_layer.total() * dense_layers;
  c.token_embedding = m.vocab * h;
  c.position_embedding = m.position == PositionKind::kLearned ? m.max_positions * h : 0;
  c.final_norm = norm_params(m);
  c.lm_head = m.tied_embeddings ? 0 : m.vocab * h;
  c.total = c.layers_total + c.token_embedding + c.position_embedding + c.final_norm + c.lm_head;
  c.mtp_per_depth = m.mtp_layers > 0 ? c.per_layer.total() + 2 * h * h + 3 * norm_params(m) : 0;
  c.mtp = m.mtp_layers * c.mtp_per_depth;

  const int64_t layer_active = c.per_layer.attention + c.per_layer.norms + c.per_layer.router + mlp_active;
  c.active_per_token = c.total - c.layers_total + layer_active * sparse_layers + c.dense_layer.total() * dense_layers;

  const int64_t attention_matmul = attention_matmul_params(m);
  const int64_t ffn_width = m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden;
  const int64_t matrices = m.ffn_kind == FfnKind::kGelu ? 2 : 3;
  const int64_t ffn_matmul = matrices * h * ffn_width * (m.moe ? m.moe->top_k + m.moe->shared_experts : 1);
  const int64_t router_matmul = m.moe ? h * m.moe->experts : 0;
  c.matmul_active = m.layers * attention_matmul + sparse_layers * (ffn_matmul + router_matmul) + dense_layers * matrices * h * m.ffn_hidden +
                    m.vocab * h;
  c.mtp_matmul_active = m.mtp_layers * (attention_matmul + ffn_matmul + router_matmul + 2 * h * h + m.vocab * h);
  return c;
}

}  // namespace trainsim
