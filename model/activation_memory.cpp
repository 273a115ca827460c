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

// Bytes per token of one layer's stored tensors, as each is kept: `e` for a 16-bit tensor, `lin`
// for a linear layer's saved input (its quantized copy under Transformer Engine's FP8/FP4
// recipes: linear.py and layernorm_linear.py keep the quantized input, column-wise where the
// backward needs it; the 16-bit tensor is freed once nothing else holds it). Rules and sources
// in docs/model-math.md section 3.
struct LayerTensors {
  double e = 2, lin = 2;
  bool quantized = false;
  double qkv_input = 0;   // the input norm's output (replicated)
  double mlp_input = 0;   // the pre-MLP norm's output (replicated)
  double proj_input = 0;  // per value of the attention output
  double ffn_pass = 0;    // one FFN pass's inner tensors per token (split over TP)
  double expert_inputs = 0;  // MoE: the routed (and shared) experts' input copies beyond the norm output (split)
};

LayerTensors layer_tensors(const ModelSpec& m, const ActivationLayout& l) {
  LayerTensors x;
  x.e = l.bytes_per_value;
  x.quantized = l.quantized_input_bytes > 0;
  x.lin = x.quantized ? l.quantized_input_bytes : x.e;
  const double h = d(m.hidden), f = d(m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden);
  // QKV and fc1 run as LayerNormLinear: the norm's output is kept as the linear's input. MLA's
  // norm output feeds its two down projections, each keeping a copy. An MoE layer's pre-MLP norm
  // output is kept by the router (a 16-bit GEMM) as well.
  x.qkv_input = m.mla && x.quantized ? 2.0 * x.lin : x.lin;
  x.mlp_input = m.moe ? x.e : x.lin;
  // The attention kernel keeps its output; under delayed scaling the output projection keeps a
  // quantized copy too (Megatron-Core makes it keep the 16-bit one for the other recipes:
  // attention.py, set_save_original_input(linear_proj), Transformer Engine >= 2.6). Unfused
  // attention does not keep its output.
  const bool proj_copy = x.quantized && l.delayed_scaling;
  x.proj_input = l.attention == AttentionKernel::kUnfused ? (proj_copy ? x.lin : x.e) : x.e + (proj_copy ? x.lin : 0.0);
  // GELU keeps its input (f), SwiGLU its gate and up outputs (2f); fc2 keeps the product (f).
  const double act_kept = m.ffn_kind == FfnKind::kGelu ? f : 2.0 * f;
  x.ffn_pass = x.e * act_kept + x.lin * f;
  if (m.moe) {
    const double routed = d(m.moe->top_k) * l.expert_load, shared = d(m.moe->shared_experts);
    // 16-bit: each routed copy beyond the first is a tensor of its own. Quantized: the experts'
    // grouped linear keeps every routed copy quantized; the shared experts' fc1 a copy of its own
    // only under delayed scaling (shared_experts.py, set_save_original_input).
    x.expert_inputs = x.quantized ? h * x.lin * (routed + (l.delayed_scaling ? shared : 0.0)) : (routed - 1.0) * h * x.e;
  }
  return x;
}

// What Megatron-Core's selective modules beyond the attention core leave out of a layer's stored
// activations (docs/model-math.md §3): the MLP block's inner tensors (mlp, moe: the checkpoint
// keeps the block's input), the experts' activation outputs (moe_act: f per routed copy, whose
// quantized copy fc2 then does not keep: experts.py set_save_original_input(linear_fc2)), the
// shared experts' inner tensors, the pre-MLP norm's output (layernorm; MoE layers only:
// Transformer Engine fuses a dense layer's norms into its linears, which keep their outputs).
// Units as activation_bytes_per_layer's: `replicated` over SP, `split` over TP.
void drop_recomputed_modules(const ModelSpec& m, const ActivationLayout& l, const LayerTensors& x, double sb, double& replicated, double& split) {
  const double h = d(m.hidden);
  if (!m.moe) {
    if (recomputes(l, kRecomputeMlp)) {
      replicated -= x.mlp_input * sb * h;
      split -= sb * x.ffn_pass;
    }
    return;
  }
  const double routed = d(m.moe->top_k) * l.expert_load, shared = d(m.moe->shared_experts), f = d(m.moe->expert_ffn_hidden);
  if (recomputes(l, kRecomputeLayernorm)) replicated -= x.mlp_input * sb * h;
  if (recomputes(l, kRecomputeMoe)) {
    split -= (routed + shared) * sb * x.ffn_pass + sb * x.expert_inputs;
    return;
  }
  if (recomputes(l, kRecomputeMoeAct)) split -= routed * sb * (x.lin * f + (l.eager_glu_clamp ? 2.0 * f * x.e : 0.0));
  if (recomputes(l, kRecomputeSharedExperts)) split -= shared * sb * x.ffn_pass;
}
}  // namespace

double activation_bytes_per_layer(const ModelSpec& m, const ActivationLayout& l) {
  const double sb = rank_tokens(m, l);
  const double e = l.bytes_per_value, h = d(m.hidden), t = d(l.tp);
  const double mask = m.dropout ? 1.0 : 0.0;  // dropout masks take one byte per value
  const double sp_split = l.sequence_parallel ? t : 1.0;

  if (l.recompute == Recompute::kFull) return e * sb * h / sp_split;  // only the layer input is kept
  if (l.recompute == Recompute::kSelectiveOp) return selective_op_bytes(m, l);

  const LayerTensors x = layer_tensors(m, l);
  // Outside the tensor-parallel region (split only by sequence parallelism): both norm inputs,
  // the QKV and MLP input (norm outputs), the two dropout masks.  Korthikanti: 10 sbh.
  double replicated = sb * h * (2 * e + x.qkv_input + x.mlp_input + 2 * mask);

  // Inside it (split by t): Q, K, V, the output projection's input, the FFN's inner tensors.
  const double q = d(m.attention_width()), kv = d(m.kv_width());
  const double routed = ffn_passes(m, l);
  double split = sb * e * (q + 2 * kv) + sb * x.proj_input * q + routed * sb * x.ffn_pass;
  if (m.mla) {
    // MLA (Megatron-Core MLASelfAttention): Q and K are qk_head_dim wide per head (K's rope part
    // copied to every head), V and the output projection's input head_dim; the down projections'
    // outputs (the latent norms' inputs, 16-bit) and the norms' outputs (the up projections'
    // inputs, kept as LayerNormLinear keeps them) on the rank's tokens, before the SP gather.
    const double qk = d(m.heads * m.qk_head_dim());
    split = sb * e * (2 * qk + q) + sb * x.proj_input * q + routed * sb * x.ffn_pass;
    if (recomputes(l, kRecomputeMlaUpProj)) split -= sb * e * (2 * qk + q);  // Q, K and V rebuilt from the latents
    const MlaSpec& a = *m.mla;
    replicated += sb * (e * d(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) + x.lin * d(a.q_lora_rank + a.kv_lora_rank));
  }
  if (m.moe) split += sb * x.expert_inputs;
  if (m.moe && l.eager_glu_clamp) split += d(m.moe->top_k) * l.expert_load * sb * 2.0 * d(m.moe->expert_ffn_hidden) * x.e;

  // Attention core: unfused keeps the softmax output (+ dropout mask and output) over a*s^2;
  // selective recompute drops exactly these. Flash keeps one fp32 log-sum-exp per row and head.
  const double a = d(m.heads);
  if (l.attention == AttentionKernel::kUnfused) {
    if (!recomputes(l, kRecomputeCoreAttn)) split += a * d(m.seq_len) * sb * (e + mask + mask * e);
  } else {
    split += 4.0 * a * sb;
  }
  double kept_replicated = replicated;
  drop_recomputed_modules(m, l, x, sb, kept_replicated, split);
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
