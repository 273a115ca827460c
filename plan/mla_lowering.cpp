// The projections of multi-head latent attention (DeepSeek-V2/V3) as Megatron-Core's
// MLASelfAttention runs them with Transformer Engine (megatron/core/transformer/
// multi_latent_attention.py, read at d98e8a6, 2026-08): from the pre-attention norm's output to the
// Q, K and V the attention core reads. The core and the output projection are the dense layer's
// (plan/lowering.cpp): QK heads qk_head_dim wide, V heads head_dim, linear_proj heads x v -> h.
// - linear_q_down_proj (h -> q_lora_rank) and linear_kv_down_proj (h -> kv_lora_rank + rope) are
//   TELinear with parallel_mode "duplicated": whole weights on every TP rank, run on the rank's
//   tokens (its sequence shard with SP; every token, on every rank, without).
// - q_layernorm and kv_layernorm (RMSNorm) on the latents, on the same tokens.
// - The tensor-parallel region starts after them: with SP the latents (q_lora_rank + kv_lora_rank,
//   and the rope-wide key part) are all-gathered instead of the h-wide norm output; the backward
//   reduce-scatters their gradient and gathers them again for the weight gradients. Without SP the
//   backward all-reduces the latents' gradient.
// - linear_q_up_proj (q_lora_rank -> heads x (nope + rope); linear_q_proj from h without Q
//   compression) and linear_kv_up_proj (kv_lora_rank -> heads x (nope + v)) are column-parallel:
//   heads / tp per rank.
// - RoPE with apply_rope_fusion (megatron/core/fusions/fused_mla_yarn_rope_apply.py): the query's
//   rope part rotated in place (read and write heads x rope); the KV split kernel reads the KV
//   up-projection's output (heads x (nope + v)) and the rope key part and writes the key (heads x
//   qk, the rope part copied to every head) and the value (heads x v); the backward the same bytes.
// Not modeled: the TP all-reduce, once per iteration, of the duplicated weights' gradients with SP;
// Megatron-Core's mla_up_proj recompute module; the fused down projection (mla_down_proj_fusion).
#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

namespace {

// The TP region's entry for `width` values per token: all-gather (SP) or the backward's all-reduce.
void add_latent_boundary(LayerWork& w, const Shapes& s, bool sp, int64_t width) {
  if (s.t == 1) return;
  const double bytes = static_cast<double>(s.tokens) * static_cast<double>(width) * s.e;
  if (!sp) {
    w.backward.push_back(collective("tp_allreduce", CollectiveKind::kAllReduce, GroupKind::kTp, bytes));
    return;
  }
  w.forward.push_back(collective("sp_allgather", CollectiveKind::kAllGather, GroupKind::kTp, bytes));
  w.backward.push_back(collective("sp_reducescatter", CollectiveKind::kReduceScatter, GroupKind::kTp, bytes));
  w.backward.push_back(collective("sp_allgather_wgrad", CollectiveKind::kAllGather, GroupKind::kTp, bytes));
}

}  // namespace

void add_mla_projections(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s, double norm_forward, double norm_backward) {
  const MlaSpec& a = *m.mla;
  const bool sp = p.sequence_parallel && s.t > 1;
  const int64_t local = sp ? s.tokens / s.t : s.tokens;  // tokens the duplicated down projections see
  const int64_t heads = s.heads_per_rank;
  const double e = s.e;
  const auto norm = [&](const char* name, const char* backward, int64_t width) {
    const double values = static_cast<double>(local) * static_cast<double>(width) * e;
    w.forward.push_back(memory(name, 2.0 * values * norm_forward));
    w.backward.push_back(memory(backward, 3.0 * values * norm_backward));
  };
  if (a.q_lora_rank > 0) {
    add_linear(w, "qkv_down_q", "qkv_down_q_dgrad", "qkv_down_q_wgrad", local, a.q_lora_rank, s.h);
  }
  add_linear(w, "qkv_down_kv", "qkv_down_kv_dgrad", "qkv_down_kv_wgrad", local, a.kv_lora_rank + a.qk_rope_head_dim, s.h);
  if (a.q_lora_rank > 0) norm("norm_q", "norm_q_bwd", a.q_lora_rank);
  norm("norm_kv", "norm_kv_bwd", a.kv_lora_rank);
  // Without Q compression linear_q_proj is column-parallel on h: the norm output enters the region whole.
  add_latent_boundary(w, s, sp, (a.q_lora_rank > 0 ? a.q_lora_rank : s.h) + a.kv_lora_rank + a.qk_rope_head_dim);
  if (a.q_lora_rank > 0) {
    add_linear(w, "qkv_up_q", "qkv_up_q_dgrad", "qkv_up_q_wgrad", s.tokens, heads * a.qk_head_dim(), a.q_lora_rank);
  } else {
    add_linear(w, "qkv_q", "qkv_q_dgrad", "qkv_q_wgrad", s.tokens, heads * a.qk_head_dim(), s.h);
  }
  add_linear(w, "qkv_up_kv", "qkv_up_kv_dgrad", "qkv_up_kv_wgrad", s.tokens, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank);
  // Fused MLA RoPE: Q's rope part in place; KV and the rope key part read, key and value written.
  const double read = static_cast<double>(heads * (a.qk_rope_head_dim + a.qk_nope_head_dim + a.v_head_dim) + a.qk_rope_head_dim);
  const double written = static_cast<double>(heads * (a.qk_rope_head_dim + a.qk_head_dim() + a.v_head_dim));
  const double bytes = static_cast<double>(s.tokens) * (read + written) * e;
  w.forward.push_back(memory("rotary", bytes));
  w.backward.push_back(memory("rotary_bwd", bytes));
}

}  // namespace trainsim::lowering
