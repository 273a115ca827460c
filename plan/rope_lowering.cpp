// Q and K's rotary embedding as Megatron-Core applies it (not for multi-head latent attention,
// whose fused YaRN RoPE is plan/mla_lowering.cpp's): the fused kernel, or its unfused PyTorch code
// where a YaRN attention factor rules the fused one out.
#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

// YaRN with an attention factor under Megatron-Core: Transformer Engine's fused RoPE takes no
// factor, so apply_rotary_pos_emb falls back to _apply_rotary_pos_emb_bshd (megatron/core/models/
// common/embeddings/rope_utils.py, "mscale=... is not supported by TE's fused RoPE. Using unfused
// implementation", in every Megatron-LM that Megatron-Bridge v0.2.0-v0.6.0 pins) on Q and K, eager:
// t * cos (2), rotate_half's negation of one half (1) and torch.cat (2), that times sin (2), the
// sum (3) and the final torch.cat with the empty pass-through part (2): 10 bytes per byte of Q and
// K, where a fused kernel moves 2. Backward through autograd: the two products' gradients (2 + 2),
// the negation's (1), chunk's torch.cat of the halves (2), the two paths' gradients summed (3), the
// two slices' backwards (zeros and a copy, 3; zeros for the empty one, 1) and their sum (3): 17.
// Per tensor 15 aten calls (two slices, cos and sin with the factor and cast, the 7 above) and 9
// autograd nodes.
namespace {
bool unfused_yarn_rope(const ModelSpec& m, const ParallelPlan& p) {
  return m.rope_attention_factor != 1.0 && !m.mla && p.host_stack == HostStack::kTransformerEngine;
}
}  // namespace

void add_rope(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  const double rotated = static_cast<double>(s.tokens) * static_cast<double>((s.q + s.kv) / s.t) * s.e;
  if (!unfused_yarn_rope(m, p)) {
    // The fused kernel (apply_rotary_pos_emb): reads and writes Q and K; the backward rotates
    // their gradients back.
    w.forward.push_back(memory("rotary", 2 * rotated));
    w.backward.push_back(memory("rotary_bwd", 2 * rotated));
    return;
  }
  Op forward = memory("rotary_unfused", 10 * rotated);
  Op backward = memory("rotary_unfused_bwd", 17 * rotated);
  forward.eager_ops = 2 * 15;
  backward.eager_ops = 2 * 9;
  backward.backward = true;
  w.forward.push_back(forward);
  w.backward.push_back(backward);
}

}  // namespace trainsim::lowering
