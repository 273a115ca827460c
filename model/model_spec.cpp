// Validation of ModelSpec and names of its enums.
#include "model/model_spec.hpp"

#include <cmath>
#include <cstdio>

#include "common/limits.hpp"

namespace trainsim {

namespace {
// `key` (the JSON path below the model) from 1 to `max` (common/limits.hpp says why each bound).
void require_size(ProblemList& problems, const std::string& where, const char* key, int64_t value, int64_t max) {
  if (value <= 0) problems.add(where + ": /" + key + ": " + key + " (" + std::to_string(value) + ") must be >= 1");
  if (value > max) {
    problems.add(where + ": /" + key + ": " + key + " (" + std::to_string(value) + ") must be <= " + std::to_string(max) +
                 " (far beyond any trained model: a typo?)");
  }
}

// Parameters, over-estimated in double (every FFN counted as gated, biases left out), so that a
// model too large for int64 byte counts is refused before anything counts it exactly.
double parameter_bound(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  double attention = 2.0 * h * static_cast<double>(m.heads * m.head_dim) + 2.0 * h * static_cast<double>(m.kv_heads * m.head_dim);
  if (m.mla) {  // every projection as if from h (an over-estimate: the up-projections read the narrower latents)
    const double heads = static_cast<double>(m.heads);
    attention += h * (static_cast<double>(m.mla->q_lora_rank + m.mla->kv_lora_rank + m.mla->qk_rope_head_dim) +
                      heads * static_cast<double>(2 * m.mla->qk_head_dim() + m.mla->v_head_dim));
  }
  const double ffns = m.moe ? static_cast<double>(m.moe->experts + m.moe->shared_experts) : 1.0;
  const double ffn_width = static_cast<double>(m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden);
  return static_cast<double>(m.layers) * (attention + ffns * 3.0 * h * ffn_width) + 2.0 * static_cast<double>(m.vocab) * h;
}

void require_countable(ProblemList& problems, const std::string& where, const ModelSpec& m) {
  const double params = parameter_bound(m);
  if (params <= limits::kMaxParameters) return;
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", params);
  problems.add(where + ": model \"" + m.name + "\" has about " + text +
               " parameters; trainsim prices models up to 1e15 (published models: ~2e12), so its sizes are likely a typo");
}
}  // namespace

ProblemList validate_model(const ModelSpec& m, const std::string& where) {
  ProblemList p;
  require_size(p, where, "layers", m.layers, limits::kMaxLayers);
  require_size(p, where, "hidden", m.hidden, limits::kMaxWidth);
  require_size(p, where, "heads", m.heads, limits::kMaxHeads);
  require_size(p, where, "kv_heads", m.kv_heads, limits::kMaxHeads);
  require_size(p, where, "head_dim", m.head_dim, limits::kMaxWidth);
  require_size(p, where, "ffn_hidden", m.ffn_hidden, limits::kMaxWidth);
  require_size(p, where, "vocab", m.vocab, limits::kMaxVocab);
  require_size(p, where, "seq_len", m.seq_len, limits::kMaxSeqLen);
  if (m.moe) {
    require_size(p, where, "moe/experts", m.moe->experts, limits::kMaxExperts);
    require_size(p, where, "moe/top_k", m.moe->top_k, limits::kMaxExperts);
    require_size(p, where, "moe/expert_ffn_hidden", m.moe->expert_ffn_hidden, limits::kMaxWidth);
    if (m.moe->shared_experts < 0 || m.moe->shared_experts > limits::kMaxExperts) {
      p.add(where + ": /moe/shared_experts: shared_experts (" + std::to_string(m.moe->shared_experts) + ") must be from 0 to " +
            std::to_string(limits::kMaxExperts));
    }
  }
  if (m.moe && (m.moe->dense_layers < 0 || m.moe->dense_layers >= m.layers)) {
    p.add(where + ": /moe/dense_layers: dense_layers (" + std::to_string(m.moe->dense_layers) + ") must be from 0 to layers - 1 (" +
          std::to_string(m.layers - 1) + "): the first layers with a dense FFN, at least one MoE layer after them");
  }
  if (m.mtp_layers < 0 || m.mtp_layers > limits::kMaxMtpLayers) {
    p.add(where + ": /mtp_layers: mtp_layers (" + std::to_string(m.mtp_layers) + ") must be from 0 (no multi-token prediction) to " +
          std::to_string(limits::kMaxMtpLayers) + " (DeepSeek-V3 trains with 1)");
  }
  if (m.mla) {
    if (m.mla->q_lora_rank < 0 || m.mla->q_lora_rank > limits::kMaxWidth) {
      p.add(where + ": /mla/q_lora_rank: q_lora_rank (" + std::to_string(m.mla->q_lora_rank) + ") must be from 0 (no Q compression) to " +
            std::to_string(limits::kMaxWidth));
    }
    require_size(p, where, "mla/kv_lora_rank", m.mla->kv_lora_rank, limits::kMaxWidth);
    require_size(p, where, "mla/qk_nope_head_dim", m.mla->qk_nope_head_dim, limits::kMaxWidth);
    require_size(p, where, "mla/qk_rope_head_dim", m.mla->qk_rope_head_dim, limits::kMaxWidth);
    require_size(p, where, "mla/v_head_dim", m.mla->v_head_dim, limits::kMaxWidth);
  }
  if (m.sliding_window != 0 || m.sliding_window_layers != 0) {
    require_size(p, where, "sliding_window", m.sliding_window, limits::kMaxSeqLen);
    if (m.sliding_window_layers < 0 || m.sliding_window_layers > m.layers) {
      p.add(where + ": /sliding_window_layers: sliding_window_layers (" + std::to_string(m.sliding_window_layers) +
            ") must be from 0 to layers (" + std::to_string(m.layers) + ")");
    }
  }
  if (!(m.rope_attention_factor > 0) || !std::isfinite(m.rope_attention_factor)) {
    p.add(where + ": /rope_attention_factor: rope_attention_factor (" + std::to_string(m.rope_attention_factor) +
          ") must be a finite number > 0 (YaRN's factor on cos and sin; 1: none)");
  }
  if (m.rope_attention_factor != 1.0 && m.position != PositionKind::kRope) {
    p.add(where + ": /rope_attention_factor: a YaRN attention factor needs position \"rope\", not \"" + std::string(to_string(m.position)) + "\"");
  }
  if (m.glu_clamp < 0 || !std::isfinite(m.glu_clamp)) {
    p.add(where + ": /glu_clamp: glu_clamp (" + std::to_string(m.glu_clamp) + ") must be a finite number >= 0 (the GLU's clamp limit; 0: none)");
  }
  if (m.glu_clamp > 0 && m.ffn_kind != FfnKind::kSwiglu) {
    p.add(where + ": /glu_clamp: a clamped GLU needs a gated FFN (ffn_kind \"swiglu\"), not \"" + std::string(to_string(m.ffn_kind)) + "\"");
  }
  if (!p.empty()) return p;  // the relations below need sizes in range
  require_countable(p, where, m);
  if (m.heads % m.kv_heads != 0) {
    p.add(where + ": /kv_heads: kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" +
          std::to_string(m.heads) + ") of model \"" + m.name + "\" (each KV head serves a whole group of query heads)");
  }
  if (m.mla) {
    const std::string of = " of model \"" + m.name + "\" (multi-head latent attention";
    if (m.kv_heads != m.heads) {
      p.add(where + ": /kv_heads: kv_heads (" + std::to_string(m.kv_heads) + ") must equal heads (" + std::to_string(m.heads) + ")" + of +
            " gives every head its own K and V)");
    }
    if (m.head_dim != m.mla->v_head_dim) {
      p.add(where + ": /head_dim: head_dim (" + std::to_string(m.head_dim) + ") must equal mla/v_head_dim (" + std::to_string(m.mla->v_head_dim) +
            ")" + of + ": head_dim is the V head width; leave it out to take v_head_dim)");
    }
    if (m.position != PositionKind::kRope) p.add(where + ": /position: position \"" + std::string(to_string(m.position)) + "\" must be \"rope\"" + of + " rotates qk_rope_head_dim of each head)");
    if (m.mla->qk_rope_head_dim % 2 != 0) {
      p.add(where + ": /mla/qk_rope_head_dim: qk_rope_head_dim (" + std::to_string(m.mla->qk_rope_head_dim) + ") must be even (RoPE turns pairs of dimensions)");
    }
    if (m.sliding_window > 0) p.add(where + ": /sliding_window: a sliding window" + of + ") is not modeled");
    if (m.linear_bias || m.qkv_bias) p.add(where + ": /linear_bias: biases" + of + " has none) are not modeled");
  }
  if (m.position == PositionKind::kLearned && m.max_positions < m.seq_len) {
    p.add(where + ": /seq_len: seq_len (" + std::to_string(m.seq_len) + ") exceeds the learned position table (" +
          std::to_string(m.max_positions) + " rows, key max_positions) of model \"" + m.name + "\"");
  }
  if (m.moe) {
    if (m.moe->top_k > m.moe->experts) {
      p.add(where + ": /moe/top_k: top_k (" + std::to_string(m.moe->top_k) + ") must be <= experts (" +
            std::to_string(m.moe->experts) + ")");
    }
  }
  return p;
}

const char* to_string(FfnKind kind) { return kind == FfnKind::kGelu ? "gelu" : "swiglu"; }
const char* to_string(NormKind kind) { return kind == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
const char* to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRope: return "rope";
    case PositionKind::kAlibi: return "alibi";
  }
  return "?";
}

}  // namespace trainsim
