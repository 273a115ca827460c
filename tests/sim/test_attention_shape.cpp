// Fused attention by shape: the measured curves of shared/reference/microbench.md §2 at their
// points, between them, clamped beyond them, and the datasheet model pricing each op at its shape.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/attention_shape.hpp"
#include "sim/cost_model.hpp"
#include "sim/reference_efficiency.hpp"

using namespace trainsim;

TEST_CASE("attention shape factors are the measured TFLOP/s over the head-128, 4k-token figure") {
  // FlashAttention-2 fwd+bwd, causal, H100: hd128 163 .. 328 over 294; hd64 at 1k: 192.
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 128, 4096) == Approx(1.0));
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 128, 16384) == Approx(328.0 / 294));
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 64, 1024) == Approx(192.0 / 294));
  CHECK(attention_shape_factor(AttentionCurve::kA100Flash2, 128, 512) == Approx(99.0 / 173));
  // cuDNN forward, causal, H100: hd256 at 8k 497 over hd128 at 4k 518.
  CHECK(attention_shape_factor(AttentionCurve::kHopperCudnn, 256, 8192) == Approx(497.0 / 518));
  // Between points: linear in log2 of the sequence (3k: 0.585 of the way from 2k to 4k) and of
  // the head size (hd 96: 0.585 of the way from 64 to 128).
  const double w = std::log2(3.0) - 1.0;
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 128, 3072) == Approx((265 * (1 - w) + 294 * w) / 294));
  const double h = std::log2(96.0) - 6.0;
  CHECK(attention_shape_factor(AttentionCurve::kA100Flash2, 96, 4096) == Approx((156 * (1 - h) + 173 * h) / 173));
  // Clamped beyond the measured range; no curve: 1.
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 128, 131072) == Approx(328.0 / 294));
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 32, 128) == Approx(141.0 / 294));
  CHECK(attention_shape_factor(AttentionCurve::kHopperFlash2, 512, 4096) == Approx(1.0));
  CHECK(attention_shape_factor(AttentionCurve::kNone, 64, 1024) == 1.0);
}

TEST_CASE("Blackwell's cuDNN curve: head dim 64 at the measured same-source ratio to head dim 128") {
  // cuDNN SDPA forward, non-causal, 1k tokens, batch 32 (flash-attention PR #2605): 979.5 at head
  // dim 64, 1428 at 128. Head dims above 128 take the 128 row (no wider one measured).
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 128, 4096) == Approx(1.0));
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 64, 4096) == Approx(979.5 / 1428));
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 64, 16384) == Approx(979.5 / 1428 * 1228.7 / 902.6));
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 192, 4096) == Approx(1.0));
  // GPT-OSS's heads (64) cost more per FLOP than Llama's (128) on a B200.
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 64, 4096) < attention_shape_factor(AttentionCurve::kBlackwellCudnn, 128, 4096));
}

TEST_CASE("the datasheet model prices fused attention at each op's head size and per-rank sequence") {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = 8;
  EfficiencyConstants c;
  c.kernel_overhead_s = 0;
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  CHECK(reference_efficiency(hw.gpu, Precision::kBf16).attention_curve == AttentionCurve::kHopperCudnn);
  CHECK(reference_efficiency(hw.gpu, Precision::kBf16, true).attention_curve == AttentionCurve::kHopperFlash2);
  Op op;
  op.kind = OpKind::kAttention;
  op.attention_batch_heads = 32;
  op.attention_head_dim = 128;
  op.attention_seq = 4096;
  const double reference = cost.attention_s(op) / op.flops();  // seconds per FLOP at the reference shape
  op.attention_seq = 1024;
  CHECK(cost.attention_s(op) / op.flops() == Approx(reference * 518.0 / 347));  // cuDNN causal hd128 at 1k: 347
  // Context parallelism: a rank's kernel sees seq / cp of the sequence.
  op.attention_seq = 8192;
  op.attention_cp = 8;
  CHECK(cost.attention_s(op) / op.flops() == Approx(reference * 518.0 / 347));
}
