// Activation memory terms; docs/model-math.md §3 lists each stored tensor with its source.
#include "model/activation_memory.hpp"

namespace trainsim {

namespace {
double d(int64_t x) { return static_cast<double>(x); }
}  // namespace

double activation_bytes_per_layer(const ModelSpec& m, const ActivationLayout& l) {
  const double sb = d(m.seq_len) * d(l.micro_batch);
  const double e = l.bytes_per_value, h = d(m.hidden), t = d(l.tp);
  const double mask = m.dropout ? 1.0 : 0.0;  // dropout masks take one byte per value
  const double sp_split = l.sequence_parallel ? t : 1.0;

  if (l.recompute == Recompute::kFull) return e * sb * h / sp_split;  // only the layer input is kept

  // Outside the tensor-parallel region (split only by sequence parallelism): both norm inputs,
  // the QKV and MLP input (norm outputs), the two dropout masks.  Korthikanti: 10 sbh.
  const double replicated = sb * h * (2 * e + e + e + 2 * mask);

  // Inside it (split by t): Q, K, V, the output projection's input, the FFN's inner tensors.
  const double q = d(m.attention_width()), kv = d(m.kv_width());
  const double routed = m.moe ? d(m.moe->top_k) : 1.0;
  const double f = d(m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden);
  // GELU: its input and output (2f); SwiGLU: gate and up outputs and their product (3f).
  const double ffn_values = m.ffn_kind == FfnKind::kGelu ? 2 * f : 3 * f;
  double split = sb * e * (q + 2 * kv + q) + routed * sb * e * ffn_values;
  if (m.moe) split += (routed - 1.0) * sb * e * h;  // each extra routed copy of a token's FFN input

  // Attention core: unfused keeps the softmax output (+ dropout mask and output) over a*s^2;
  // selective recompute drops exactly these. Flash keeps one fp32 log-sum-exp per row and head.
  const double a = d(m.heads);
  if (l.attention == AttentionKernel::kUnfused) {
    if (l.recompute == Recompute::kNone) split += a * d(m.seq_len) * sb * (e + mask + mask * e);
  } else {
    split += 4.0 * a * sb;
  }
  return replicated / sp_split + split / t;
}

double activation_bytes_embedding(const ModelSpec& m, const ActivationLayout& l) {
  const double sp_split = l.sequence_parallel ? d(l.tp) : 1.0;
  return m.dropout ? d(m.seq_len) * d(l.micro_batch) * d(m.hidden) / sp_split : 0.0;
}

double activation_bytes_output(const ModelSpec& m, const ActivationLayout& l) {
  const double sb = d(m.seq_len) * d(l.micro_batch);
  const double sp_split = l.sequence_parallel ? d(l.tp) : 1.0;
  // Final-norm input and LM-head input in the activation dtype; logits in fp32 for the loss
  // (vocab-parallel over t): Korthikanti et al. 2022 §4.3.
  return 2.0 * l.bytes_per_value * sb * d(m.hidden) / sp_split + 4.0 * sb * d(m.vocab) / d(l.tp);
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* to_string(AttentionKernel k) { return k == AttentionKernel::kFlash ? "flash" : "unfused"; }

}  // namespace trainsim
