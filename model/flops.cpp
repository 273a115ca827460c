// FLOP counting; docs/model-math.md §2 derives each term.
#include "model/flops.hpp"

#include "model/param_count.hpp"

namespace trainsim {

FlopsPerToken flops_per_token(const ModelSpec& m, Recompute recompute) { return flops_per_token(m, recompute, m.layers); }

namespace {
// Forward matmul FLOPs per token that Megatron-Core's selective modules run again: the attention
// core (core_attn), the dense MLP (mlp), the MoE block with its router (moe), the shared experts;
// layernorm and moe_act re-run elementwise ops only.
double selective_rerun(const ModelSpec& m, const FlopsPerToken& f, RecomputeModules modules) {
  const ParamCounts params = count_params(m);
  // MoE modules re-run in the MoE layers; a dense first layer's MLP is the mlp module.
  const double layers = static_cast<double>(m.moe ? m.moe_layers() : m.layers), routed = m.moe ? static_cast<double>(m.moe->top_k) : 1.0;
  const double experts = m.moe ? static_cast<double>(m.moe->experts) : 1.0;
  double rerun = (modules & kRecomputeCoreAttn) != 0 ? f.forward_attention : 0.0;
  if (!m.moe && (modules & kRecomputeMlp) != 0) rerun += 2.0 * layers * static_cast<double>(params.per_layer.mlp);
  if (m.moe && (modules & kRecomputeMlp) != 0) rerun += 2.0 * static_cast<double>(m.moe->dense_layers * params.dense_layer.mlp);
  if (m.mla && (modules & kRecomputeMlaUpProj) != 0) {  // MLA's up projections, in every layer
    const MlaSpec& a = *m.mla;
    const double q_up = static_cast<double>(a.q_lora_rank > 0 ? a.q_lora_rank : m.hidden) * static_cast<double>(m.heads * a.qk_head_dim());
    const double kv_up = static_cast<double>(a.kv_lora_rank) * static_cast<double>(m.heads * (a.qk_nope_head_dim + a.v_head_dim));
    rerun += 2.0 * static_cast<double>(m.layers) * (q_up + kv_up);
  }
  const double shared = 2.0 * layers * static_cast<double>(params.per_layer.shared);
  if (m.moe && (modules & kRecomputeMoe) != 0) {
    rerun += 2.0 * layers * (static_cast<double>(params.per_layer.mlp) * routed / experts + static_cast<double>(params.per_layer.router)) + shared;
  } else if (m.moe && (modules & kRecomputeSharedExperts) != 0) {
    rerun += shared;
  }
  return rerun;
}
}  // namespace

FlopsPerToken flops_per_token(const ModelSpec& m, Recompute recompute, int64_t recomputed_layers, RecomputeModules modules) {
  FlopsPerToken f;
  const ParamCounts params = count_params(m);
  // Multi-token prediction adds, per depth, a layer (full attention), eh_proj and the LM head again.
  f.forward_matmul = 2.0 * static_cast<double>(params.matmul_active + params.mtp_matmul_active);
  f.forward_lm_head = 2.0 * static_cast<double>(1 + m.mtp_layers) * static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  // Each query against seq_len keys (the usual MFU convention, causal masking not discounted); a
  // windowed layer's query against sliding_window keys. QK^T is 2 keys qk_head_dim FLOPs per head,
  // AV 2 keys head_dim: 4 keys head_dim, or with MLA's 192-wide QK and 128-wide V heads 2 keys (192 + 128).
  const double windowed = static_cast<double>(m.windowed_layers());
  const double keys = (static_cast<double>(m.layers + m.mtp_layers) - windowed) * static_cast<double>(m.seq_len) +
                      windowed * static_cast<double>(m.sliding_window);
  f.forward_attention = 2.0 * keys * static_cast<double>(m.heads) * static_cast<double>(m.qk_head_dim() + m.head_dim);
  f.model = 3.0 * f.forward();
  switch (recompute) {
    case Recompute::kNone: f.hardware = f.model; break;
    // Selective recompute runs the attention core (QK^T, softmax, AV) forward again, and the
    // blocks of the other modules asked for.
    case Recompute::kSelective: f.hardware = f.model + selective_rerun(m, f, modules); break;
    // Full recompute runs every transformer layer's forward again; the LM head is outside it.
    // With the block method only `recomputed_layers` of them: the others' forward runs once (every
    // layer's forward is the same, so the layers' share is their count over the model's).
    case Recompute::kFull: {
      f.hardware = f.model + f.forward() - f.forward_lm_head;
      if (recomputed_layers < m.layers && m.layers > 0) {
        f.hardware -= (f.forward() - f.forward_lm_head) * static_cast<double>(m.layers - recomputed_layers) / static_cast<double>(m.layers);
      }
      break;
    }
    // Per-op checkpointing runs every other matmul again (wk, wo and w3 or fc2: torchtitan's policy
    // keeps wq, wv, w1, w2) and attention not at all; elementwise ops cost no FLOPs here.
    case Recompute::kSelectiveOp: {
      const double routed = static_cast<double>(m.ffn_passes());
      const double ffn = static_cast<double>(m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden);
      const double h = static_cast<double>(m.hidden);
      const double rerun = h * static_cast<double>(m.kv_width()) + static_cast<double>(m.attention_width()) * h + routed * h * ffn;
      f.hardware = f.model + 2.0 * static_cast<double>(m.layers) * rerun;
      break;
    }
  }
  return f;
}

double model_flops_per_iteration(const ModelSpec& m, int64_t global_batch) {
  return flops_per_token(m, Recompute::kNone).model * static_cast<double>(global_batch) *
         static_cast<double>(m.seq_len);
}

double hardware_flops_per_iteration(const ModelSpec& m, int64_t global_batch, Recompute recompute) {
  return hardware_flops_per_iteration(m, global_batch, recompute, m.layers);
}

double hardware_flops_per_iteration(const ModelSpec& m, int64_t global_batch, Recompute recompute, int64_t recomputed_layers,
                                    RecomputeModules modules) {
  return flops_per_token(m, recompute, recomputed_layers, modules).hardware * static_cast<double>(global_batch) * static_cast<double>(m.seq_len);
}

}  // namespace trainsim
