// Activation memory terms; docs/model-math.md §3 lists each stored tensor with its source.
#include "model/activation_memory.hpp"

#include <algorithm>

namespace trainsim {

namespace {
double d(int64_t x) { return static_cast<double>(x); }
// Tokens of one micro-batch on this rank: context parallelism splits the sequence cp ways.
double rank_tokens(const ModelSpec& m, const ActivationLayout& l) { return d(m.seq_len) * d(l.micro_batch) / d(l.cp); }
// FFN passes per token on this rank: the routed copies at the rank's load, plus the shared experts.
double ffn_passes(const ModelSpec& m, const ActivationLayout& l) {
  return m.moe ? d(m.moe->top_k) * l.expert_load + d(m.moe->shared_experts) : 1.0;
}

// torchtitan's per-op policy (_apply_ac_to_transformer_block with selective_ac_option "op": every
// op of its save list keeps its output except every second aten.mm): the layer input (the
// checkpoint's), the outputs of the 1st, 3rd, 5th and 7th matmul (wq, wv, w1, w2 in Llama's order;
// wq, wv, fc1 without a gate) and attention's output and fp32 log-sum-exp. w2's output is kept as
// the matmul wrote it, whole on every TP rank.
double selective_op_bytes(const ModelSpec& m, const ActivationLayout& l) {
  const double sb = rank_tokens(m, l);
  const double e = l.bytes_per_value, t = d(l.tp);
  const double sp_split = l.sequence_parallel ? t : 1.0;
  const double routed = ffn_passes(m, l);
  const double f = d(m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden);
  const double q = d(m.attention_width()), kv = d(m.kv_width());
  const bool gated = m.ffn_kind != FfnKind::kGelu;
  double bytes = e * sb * d(m.hidden) / sp_split;                   // layer input
  bytes += e * sb * (q + kv + q + routed * f) / t + 4.0 * d(m.heads) * sb / t;  // wq, wv, attention, w1
  if (gated) bytes += e * sb * d(m.hidden) * routed;                 // w2
  return bytes;
}

bool recomputes(const ActivationLayout& l, RecomputeModules module) {
  return l.recompute == Recompute::kSelective && (l.recompute_modules & module) != 0;
}

// What Megatron-Core's selective modules beyond the attention core leave out of a layer's stored
// activations (docs/model-math.md §3): the MLP block's inner tensors (mlp, moe: the checkpoint
// keeps the block's input), the experts' activation outputs (moe_act: f per routed copy), the
// shared experts' inner tensors, the pre-MLP norm's output (layernorm; MoE layers only: Transformer
// Engine fuses a dense layer's norms into its linears, which keep their outputs). Units as
// activation_bytes_per_layer's: `replicated` over SP, `split` over TP.
void drop_recomputed_modules(const ModelSpec& m, const ActivationLayout& l, double sb, double ffn_values, double& replicated, double& split) {
  const double e = l.bytes_per_value, h = d(m.hidden);
  if (!m.moe) {
    if (recomputes(l, kRecomputeMlp)) {
      replicated -= e * sb * h;
      split -= sb * e * ffn_values;
    }
    return;
  }
  const double routed = d(m.moe->top_k) * l.expert_load, shared = d(m.moe->shared_experts), f = d(m.moe->expert_ffn_hidden);
  if (recomputes(l, kRecomputeLayernorm)) replicated -= e * sb * h;
  if (recomputes(l, kRecomputeMoe)) {
    split -= (routed + shared) * sb * e * ffn_values + (routed + shared - 1.0) * sb * e * h;
    return;
  }
  if (recomputes(l, kRecomputeMoeAct)) split -= routed * sb * e * f;
  if (recomputes(l, kRecomputeSharedExperts)) split -= shared * sb * e * ffn_values;
}
}  // namespace

double activation_bytes_per_layer(const ModelSpec& m, const ActivationLayout& l) {
  const double sb = rank_tokens(m, l);
  const double e = l.bytes_per_value, h = d(m.hidden), t = d(l.tp);
  const double mask = m.dropout ? 1.0 : 0.0;  // dropout masks take one byte per value
  const double sp_split = l.sequence_parallel ? t : 1.0;

  if (l.recompute == Recompute::kFull) return e * sb * h / sp_split;  // only the layer input is kept
  if (l.recompute == Recompute::kSelectiveOp) return selective_op_bytes(m, l);

  // Outside the tensor-parallel region (split only by sequence parallelism): both norm inputs,
  // the QKV and MLP input (norm outputs), the two dropout masks.  Korthikanti: 10 sbh.
  double replicated = sb * h * (2 * e + e + e + 2 * mask);

  // Inside it (split by t): Q, K, V, the output projection's input, the FFN's inner tensors.
  const double q = d(m.attention_width()), kv = d(m.kv_width());
  const double routed = ffn_passes(m, l);
  const double f = d(m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden);
  // GELU: its input and output (2f); SwiGLU: gate and up outputs and their product (3f).
  const double ffn_values = m.ffn_kind == FfnKind::kGelu ? 2 * f : 3 * f;
  double split = sb * e * (q + 2 * kv + q) + routed * sb * e * ffn_values;
  if (m.mla) {
    // MLA (Megatron-Core MLASelfAttention): Q and K are qk_head_dim wide per head (K's rope part
    // copied to every head), V and the output projection's input head_dim; the down projections'
    // outputs (the latent norms' inputs) and the norms' outputs (the up projections' inputs) on the
    // rank's tokens, before the sequence-parallel gather.
    const double qk = d(m.heads * m.qk_head_dim());
    split = sb * e * (2 * qk + 2 * q) + routed * sb * e * ffn_values;
    if (recomputes(l, kRecomputeMlaUpProj)) split -= sb * e * (2 * qk + q);  // Q, K and V rebuilt from the latents
    const MlaSpec& a = *m.mla;
    replicated += sb * e * d(2 * a.q_lora_rank + 2 * a.kv_lora_rank + a.qk_rope_head_dim);
  }
  if (m.moe) split += (routed - 1.0) * sb * e * h;  // each extra routed copy of a token's FFN input

  // Attention core: unfused keeps the softmax output (+ dropout mask and output) over a*s^2;
  // selective recompute drops exactly these. Flash keeps one fp32 log-sum-exp per row and head.
  const double a = d(m.heads);
  if (l.attention == AttentionKernel::kUnfused) {
    if (!recomputes(l, kRecomputeCoreAttn)) split += a * d(m.seq_len) * sb * (e + mask + mask * e);
  } else {
    split += 4.0 * a * sb;
  }
  double kept_replicated = replicated;
  drop_recomputed_modules(m, l, sb, ffn_values, kept_replicated, split);
  return kept_replicated / sp_split + split / t;
}

double activation_bytes_embedding(const ModelSpec& m, const ActivationLayout& l) {
  const double sp_split = l.sequence_parallel ? d(l.tp) : 1.0;
  return m.dropout ? rank_tokens(m, l) * d(m.hidden) / sp_split : 0.0;
}

double activation_bytes_output(const ModelSpec& m, const ActivationLayout& l) {
  const double sb = rank_tokens(m, l);
  const double sp_split = l.sequence_parallel ? d(l.tp) : 1.0;
  // Final-norm input and LM-head input in the activation dtype; logits in fp32 for the loss
  // (vocab-parallel over t): Korthikanti et al. 2022 §4.3. A compiled loss keeps the bf16 logits.
  const double logit_bytes = l.loss == LossKernel::kCompiled ? l.bytes_per_value : 4.0;
  return 2.0 * l.bytes_per_value * sb * d(m.hidden) / sp_split + logit_bytes * sb * d(m.vocab) / d(l.tp);
}

double recompute_working_bytes(const ModelSpec& m, const ActivationLayout& l, int64_t group_layers) {
  if (l.recompute == Recompute::kNone || group_layers <= 0) return 0.0;
  ActivationLayout kept = l;
  kept.recompute = Recompute::kNone;
  return std::max(0.0, d(group_layers) * activation_bytes_per_layer(m, kept) - activation_bytes_per_layer(m, l));
}

double loss_working_bytes(const ModelSpec& m, const ActivationLayout& l) {
  // Megatron: the bf16 logits beside their fp32 copy (the softmax and its gradient are computed in
  // place, megatron/core/tensor_parallel/cross_entropy.py). PyTorch: the gradient of the fp32
  // log-softmax and the gradient of its input, both fp32, beside the saved log-softmax
  // (cross_entropy = log_softmax + nll_loss; torchtitan deletes the bf16 logits before backward).
  // With TP the logits are vocab-parallel and PyTorch's loss_parallel computes the backward of
  // both in one decomposed expression (torch/distributed/tensor/parallel/loss.py,
  // _nll_loss_and_log_softmax_backward: (zeros with -1 at the target + exp(log-softmax)) times the
  // incoming gradient): three fp32 temporaries at once beside the saved log-softmax.
  const double logits = rank_tokens(m, l) * d(m.vocab) / d(l.tp);
  if (l.loss == LossKernel::kPytorch) return (l.tp > 1 ? 12.0 : 8.0) * logits;
  // Compiled (inductor): the forward reduces the bf16 logits to a log-sum-exp per row without an
  // fp32 copy; the backward writes the logits' bf16 gradient in one pointwise kernel.
  if (l.loss == LossKernel::kCompiled) return l.bytes_per_value * logits;
  return l.bytes_per_value * logits;
}

}  // namespace trainsim
