// Megatron-Core's selective recomputation by module (--recompute-modules; megatron/core/
// transformer/transformer_layer.py and moe/experts.py): which of a layer's forward ops run again
// before its backward.
// - core_attn (the default): the attention core (the fused kernel, or the unfused scores, softmax
//   and context), with CP's K/V exchanges that feed it;
// - layernorm: the pre-MLP norm where it is a module of its own (MoE layers under Transformer
//   Engine; a dense layer's norms are fused into the linears after them, which keep their output);
// - moe_act: the experts' activation;
// - mlp / moe: the dense MLP, or the whole MoE block with its exchanges and shared experts;
// - shared_experts: the shared experts;
// - mla_up_proj: multi-head latent attention's up projections and RoPE.
// Output-discarding checkpoints (layernorm, moe_act) re-run one op; the others re-run the block.
// The FP8 casts of a recomputed block are not re-counted (plan/fp8_lowering.cpp appends them).
#include <string>

#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

namespace {

bool attention_core(const std::string& name) {
  return name == "attention" || name == "attention_window" || name == "attn_scores" || name == "softmax" || name == "softmax_mask_fill" ||
         name == "attn_context" ||
         name == "cp_ring_kv" || name == "cp_allgather_kv" || name == "cp_a2a_qkv" || name == "cp_a2a_out";
}

// MLA's up projections (linear_q_up_proj or linear_q_proj, linear_kv_up_proj) and its fused RoPE
// (plan/mla_lowering.cpp): what Megatron-Core's mla_up_proj checkpoint (qkv_up_checkpoint) re-runs.
bool mla_up_projection(const std::string& name) {
  return name == "qkv_up_q" || name == "qkv_q" || name == "qkv_up_kv" || name == "rotary";
}

void mark_range(std::vector<bool>& rerun, size_t begin, size_t end) {
  for (size_t i = begin; i < end && i < rerun.size(); ++i) rerun[i] = true;
}

}  // namespace

std::vector<Op> selective_recompute(const ModelSpec& m, const ParallelPlan& p, const std::vector<Op>& forward, const LayerMarks& marks) {
  const RecomputeModules r = p.recompute_modules;
  std::vector<bool> rerun(forward.size(), false);
  if ((r & kRecomputeCoreAttn) != 0) {
    for (size_t i = 0; i < forward.size(); ++i) rerun[i] = rerun[i] || attention_core(forward[i].name);
  }
  const bool moe = m.moe.has_value();
  if (moe && (r & kRecomputeLayernorm) != 0 && marks.norm2 != LayerMarks::kNone) rerun[marks.norm2] = true;
  if ((!moe && (r & kRecomputeMlp) != 0) || (moe && (r & kRecomputeMoe) != 0)) mark_range(rerun, marks.mlp_begin, marks.mlp_end);
  if (moe && (r & kRecomputeMoeAct) != 0 && marks.routed_act != LayerMarks::kNone) rerun[marks.routed_act] = true;
  if (moe && (r & kRecomputeSharedExperts) != 0 && marks.shared_begin != LayerMarks::kNone) mark_range(rerun, marks.shared_begin, marks.shared_end);
  if (m.mla && (r & kRecomputeMlaUpProj) != 0) {
    for (size_t i = 0; i < forward.size(); ++i) rerun[i] = rerun[i] || mla_up_projection(forward[i].name);
  }

  // Copy in order; an op that overlaps another (the CP ring beside its attention, a TP collective
  // beside its GEMM) keeps the pairing when both run again, and runs alone otherwise.
  std::vector<int32_t> position(forward.size(), -1);
  int32_t count = 0;
  for (size_t i = 0; i < forward.size(); ++i) position[i] = rerun[i] ? count++ : -1;
  std::vector<Op> out;
  out.reserve(static_cast<size_t>(count));
  for (size_t i = 0; i < forward.size(); ++i) {
    if (!rerun[i]) continue;
    out.push_back(forward[i]);
    const int32_t paired = forward[i].overlaps_op;
    out.back().overlaps_op = paired >= 0 && static_cast<size_t>(paired) < forward.size() ? position[static_cast<size_t>(paired)] : -1;
  }
  return out;
}

}  // namespace trainsim::lowering
