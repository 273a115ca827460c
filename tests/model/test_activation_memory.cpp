// Activation memory per layer against Korthikanti et al. 2022 (arXiv 2205.05198): Table 2
// formulas (exact for GPT shapes) and the Fig. 7 percentages.
#include <catch2/catch.hpp>

#include "model/activation_memory.hpp"
#include "model/model_catalog.hpp"

using namespace trainsim;

namespace {
ActivationLayout korthikanti(int64_t tp, bool sp, Recompute r, int64_t micro_batch = 1) {
  ActivationLayout l;
  l.micro_batch = micro_batch;
  l.tp = tp;
  l.sequence_parallel = sp;
  l.recompute = r;
  l.attention = AttentionKernel::kUnfused;  // the paper's Megatron-LM kept the a*s^2 softmax
  l.bytes_per_value = 2;                    // fp16
  return l;
}
}  // namespace

TEST_CASE("per-layer activations reduce to Korthikanti Table 2 for a GPT layer") {
  const ModelSpec m = resolve_model("gpt3-175b");
  const double s = m.seq_len, b = 1, h = m.hidden, a = m.heads, t = 8;
  const double sbh = s * b * h;
  CHECK(activation_bytes_per_layer(m, korthikanti(1, false, Recompute::kNone)) ==
        Approx(sbh * (34 + 5 * a * s / h)));
  CHECK(activation_bytes_per_layer(m, korthikanti(8, false, Recompute::kNone)) ==
        Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  CHECK(activation_bytes_per_layer(m, korthikanti(8, true, Recompute::kNone)) ==
        Approx(sbh * (34 / t + 5 * a * s / (h * t))));
  CHECK(activation_bytes_per_layer(m, korthikanti(8, false, Recompute::kSelective)) == Approx(sbh * (10 + 24 / t)));
  CHECK(activation_bytes_per_layer(m, korthikanti(8, true, Recompute::kSelective)) == Approx(sbh * 34 / t));
  CHECK(activation_bytes_per_layer(m, korthikanti(8, false, Recompute::kFull)) == Approx(2 * sbh));
  CHECK(activation_bytes_per_layer(m, korthikanti(8, true, Recompute::kFull)) == Approx(2 * sbh / t));
}

TEST_CASE("Korthikanti Fig. 7: activation memory of each technique relative to tensor parallelism alone") {
  // Percent of the TP-only baseline, read from Fig. 7 (as tabulated in Calculon's validation).
  struct Row {
    const char* model;
    double seq, sel, seqsel, full;
  };
  const Row rows[] = {{"megatron-22b", 66.84, 49.42, 16.18, 7.64},
                      {"gpt3-175b", 62.04, 56.53, 18.49, 8.71},
                      {"megatron-530b", 58.31, 62.04, 20.27, 9.42}};
  for (const auto& row : rows) {
    INFO(row.model);
    const ModelSpec m = resolve_model(row.model);
    const double base = activation_bytes_per_layer(m, korthikanti(8, false, Recompute::kNone));
    auto pct = [&](bool sp, Recompute r) { return 100.0 * activation_bytes_per_layer(m, korthikanti(8, sp, r)) / base; };
    CHECK(pct(true, Recompute::kNone) == Approx(row.seq).margin(0.3));
    CHECK(pct(false, Recompute::kSelective) == Approx(row.sel).margin(0.3));
    CHECK(pct(true, Recompute::kSelective) == Approx(row.seqsel).margin(0.3));
    CHECK(pct(false, Recompute::kFull) == Approx(row.full).margin(0.3));
  }
}

TEST_CASE("flash attention keeps no s^2 term: it matches selective recompute plus the log-sum-exp") {
  const ModelSpec m = resolve_model("llama3-8b");
  ActivationLayout flash = korthikanti(1, false, Recompute::kNone);
  flash.attention = AttentionKernel::kFlash;
  ActivationLayout unfused_selective = korthikanti(1, false, Recompute::kSelective);
  const double lse = 4.0 * m.heads * m.seq_len;  // fp32 per row and head
  CHECK(activation_bytes_per_layer(m, flash) == Approx(activation_bytes_per_layer(m, unfused_selective) + lse));
}

TEST_CASE("GQA and SwiGLU change the stored tensors term by term") {
  const ModelSpec m = resolve_model("llama3-8b");  // no dropout, kv 1024 wide, SwiGLU 14336
  ActivationLayout l = korthikanti(1, false, Recompute::kSelective);
  const double sb = m.seq_len, h = m.hidden, q = m.attention_width(), kv = m.kv_width(), f = m.ffn_hidden;
  const double expected = sb * 2 * (4 * h) + sb * 2 * (2 * q + 2 * kv) + sb * 2 * 3 * f;
  CHECK(activation_bytes_per_layer(m, l) == Approx(expected));
}

TEST_CASE("activations scale linearly with the micro-batch") {
  const ModelSpec m = resolve_model("gpt3-175b");
  CHECK(activation_bytes_per_layer(m, korthikanti(8, true, Recompute::kNone, 4)) ==
        Approx(4 * activation_bytes_per_layer(m, korthikanti(8, true, Recompute::kNone, 1))));
}

TEST_CASE("torchtitan's per-op checkpointing keeps the layer input, every other matmul and attention") {
  const ModelSpec m = resolve_model("llama3-8b");  // SwiGLU: wq, wk, wv, wo, w1, w3, w2
  ActivationLayout l = korthikanti(1, false, Recompute::kSelectiveOp);
  l.attention = AttentionKernel::kFlash;
  const double sb = m.seq_len, h = m.hidden, q = m.attention_width(), kv = m.kv_width(), f = m.ffn_hidden;
  // input, wq, wv, attention output, w1, w2 (bf16), log-sum-exp (fp32)
  const double expected = 2 * sb * (h + q + kv + q + f + h) + 4.0 * m.heads * sb;
  CHECK(activation_bytes_per_layer(m, l) == Approx(expected));
  // 46% of what Megatron's selective recompute keeps for this layer.
  ActivationLayout megatron = l;
  megatron.recompute = Recompute::kSelective;
  CHECK(activation_bytes_per_layer(m, l) / activation_bytes_per_layer(m, megatron) == Approx(0.456).epsilon(0.01));
  // With TP 8 and SP the input is split by SP, the column-parallel outputs by TP, w2's not.
  ActivationLayout tp = l;
  tp.tp = 8;
  tp.sequence_parallel = true;
  CHECK(activation_bytes_per_layer(m, tp) == Approx(2 * sb * (h / 8 + (q + kv + q + f) / 8 + h) + 4.0 * m.heads * sb / 8));
}

TEST_CASE("working memory: a recomputed layer's dropped activations, or the loss's buffers on the last stage") {
  const ModelSpec m = resolve_model("llama3-8b");
  ActivationLayout l = korthikanti(1, false, Recompute::kFull);
  l.attention = AttentionKernel::kFlash;
  ActivationLayout none = l;
  none.recompute = Recompute::kNone;
  CHECK(recompute_working_bytes(m, l) == Approx(activation_bytes_per_layer(m, none) - 2.0 * m.seq_len * m.hidden));
  CHECK(recompute_working_bytes(m, none) == 0.0);
  const double logits = static_cast<double>(m.seq_len) * m.vocab;
  CHECK(loss_working_bytes(m, l) == Approx(2 * logits));  // Megatron: the bf16 logits beside the fp32 softmax
  l.loss = LossKernel::kPytorch;
  CHECK(loss_working_bytes(m, l) == Approx(8 * logits));  // PyTorch: two fp32 gradients of the logits
  l.tp = 4;
  CHECK(loss_working_bytes(m, l) == Approx(3 * logits));  // vocab-parallel over TP: loss_parallel's three temporaries
  l.loss = LossKernel::kFused;
  CHECK(loss_working_bytes(m, l) == Approx(0.5 * logits));  // Megatron's vocab-parallel bf16 logits
  // Compiled: the bf16 logits kept, their bf16 gradient written; 4 bytes a logit in all, not 12 or 16.
  l.tp = 1;
  l.loss = LossKernel::kCompiled;
  CHECK(loss_working_bytes(m, l) == Approx(2 * logits));
  ActivationLayout pytorch = l;
  pytorch.loss = LossKernel::kPytorch;
  CHECK(activation_bytes_output(m, pytorch) - activation_bytes_output(m, l) == Approx(2 * logits));
}

TEST_CASE("quantized linears keep their inputs quantized: each tensor at the width it is stored") {
  // Llama 3.1 405B at TP 4 with SP, sequence 8192, flash attention (docs/model-math.md section 3).
  const ModelSpec m = resolve_model("llama3-405b");
  ActivationLayout bf16;
  bf16.tp = 4;
  bf16.sequence_parallel = true;
  const double sb = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), t = 4;
  const double q = static_cast<double>(m.attention_width()), kv = static_cast<double>(m.kv_width()), f = static_cast<double>(m.ffn_hidden);
  const double a = static_cast<double>(m.heads);
  const double base = activation_bytes_per_layer(m, bf16);
  CHECK(base == Approx(sb * h * 8 / t + sb * (2 * (q + 2 * kv) + 2 * q + 6 * f + 4 * a) / t));

  ActivationLayout fp8 = bf16;  // per-tensor current scaling: 1 byte per saved input
  fp8.quantized_input_bytes = 1.0;
  // The two norm outputs and fc2's input drop to 1 byte; Q, K, V and the attention output stay.
  CHECK(activation_bytes_per_layer(m, fp8) == Approx(base - sb * 2 * h / t - sb * f / t));
  ActivationLayout delayed = fp8;  // delayed scaling: the output projection keeps its own copy too
  delayed.delayed_scaling = true;
  CHECK(activation_bytes_per_layer(m, delayed) == Approx(activation_bytes_per_layer(m, fp8) + sb * q / t));
  ActivationLayout nvfp4 = fp8;
  nvfp4.quantized_input_bytes = 0.5 + 1.0 / 16.0;
  CHECK(activation_bytes_per_layer(m, nvfp4) < activation_bytes_per_layer(m, fp8));
}

TEST_CASE("MoE under quantized linears: the router keeps the norm output, the experts their copies, moe_act drops fc2's") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const double sb = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), k = static_cast<double>(m.moe->top_k);
  const double f = static_cast<double>(m.moe->expert_ffn_hidden);
  ActivationLayout bf16;
  ActivationLayout fp8 = bf16;
  fp8.quantized_input_bytes = 1.0;
  // 16-bit: the norm output (2 B) and k - 1 more copies; quantized: the norm output in 16 bits
  // (the router's) and k quantized copies; QKV's input and fc2's inputs at 1 byte.
  const double copies_16 = 2 * (k - 1) * sb * h, copies_q = k * sb * h;
  const double delta = (copies_q - copies_16) - sb * h - k * sb * f;
  CHECK(activation_bytes_per_layer(m, fp8) - activation_bytes_per_layer(m, bf16) == Approx(delta));
  ActivationLayout act = fp8;
  act.recompute = Recompute::kSelective;
  act.recompute_modules = kRecomputeMoeAct;
  ActivationLayout attn = fp8;
  attn.recompute = Recompute::kSelective;
  attn.recompute_modules = 0;
  CHECK(activation_bytes_per_layer(m, attn) - activation_bytes_per_layer(m, act) == Approx(k * sb * f * 1.0));
}
