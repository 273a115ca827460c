// Causal attention TFLOP/s by head size and sequence (shared/reference/microbench.md §2a, §2b).
#include "sim/attention_shape.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace trainsim {

namespace {

// Sequences 512, 1k, 2k, 4k, 8k, 16k (log2 9 .. 14).
constexpr int kSeqs = 6;
constexpr double kFirstLog2Seq = 9.0;
using Row = std::array<double, kSeqs>;

struct Curve {
  int widths;                   // head sizes measured
  std::array<double, 3> log2_head;
  std::array<Row, 3> tflops;    // causal, per head size
};

// FlashAttention-2 forward + backward, causal (Dao-AILab/flash-attention@0251105
// assets/flash2_a100_fwd_bwd_benchmark.png, flash2_h100_fwd_bwd_benchmark.png): head dim 64, 128.
constexpr Curve kA100Flash2 = {2, {6, 7, 0}, {Row{88, 119, 140, 156, 165, 171}, Row{99, 133, 155, 173, 182, 189}, Row{}}};
constexpr Curve kHopperFlash2 = {2, {6, 7, 0}, {Row{141, 192, 232, 257, 273, 284}, Row{163, 221, 265, 294, 308, 328}, Row{}}};
// cuDNN fused attention, causal, Hopper. Head dim 64 and 256: the forward on an H100-SXM5
// (assets/flash3_fp16_fwd.png, FA3 paper), its shape standing for forward + backward. Head dim 128:
// forward + backward as 3.5 / (1/fwd + 2.5/bwd), NVIDIA's cuDNN 9.19 run on an H200 at Llama 3.1's
// GQA (64 query / 8 KV heads, batch 1; NVIDIA/cudnn-frontend@3929da2 benchmark/
// sdpa_benchmark_training/results/h200_919_only_cudnn/llama3.1_20260227_034703.csv): fwd 484 / 591 /
// 644 / 673, bwd 370 / 474 / 541 / 579 TFLOP/s at 2k / 4k / 8k / 16k, i.e. 0.790 / 1 / 1.128 / 1.200
// of 4k, on the chart's 518 at 4k (the level is the reference ratio's; this row gives the shape).
// 512 and 1k (below the CSV) keep the chart's ratios to its 2k point (315 / 484, 410 / 484). It
// replaced the chart's forward-only 484 / 518 / 529 / 539 on 2026-11-28 (session 26: all 332 runs
// 7.2% -> 7.1%, leave-one-group-out 8.0% -> 7.7%, no group worse; docs/validation.md). Session 25's
// own H200 run at 32 heads x batch 4 (MHA) is flatter, 0.89 / 1 / 1.02 / 1.07: the GQA shape is the
// Llama runs' own. At head dim 64 that run measured 0.79 of 128 at 4k, where the rows give 0.70.
constexpr Curve kHopperCudnn = {3, {6, 7, 8}, {Row{225, 288, 334, 363, 379, 388}, Row{266, 347, 409, 518, 584, 622},
                                               Row{308, 391, 450, 483, 497, 509}}};

// Blackwell, head dim 128 (the width measured along the sequence), causal, forward + backward as
// 3.5 / (1/fwd + 2.5/bwd) per sequence 512 .. 16k (NVIDIA/cudnn-frontend@0b1577c
// benchmark/sdpa_benchmark_training B200 CSVs, Llama-3.1-405B GQA shape, batch 1;
// shared/reference/microbench-moe-blackwell-amd.json): cuDNN SDPA called directly, fwd 244.1 /
// 561.3 / 907.5 / 1141.1 / 1384.2 / 1475.3 and bwd 200.6 / 376.9 / 545.1 / 832.9 / 994.9 / 1151.7
// TFLOP/s; FlashAttention-2 2.7.4.post1, fwd 63.9 / 154.4 / 254.4 / 343.0 / 399.9 / 425.1 and bwd
// 81.4 / 104.9 / 198.8 / 273.5 / 318.0 / 336.6.
// Head dim 64: the head-dim-128 row times 979.5 / 1428 = 0.686, the one same-source, same-shape
// pair of cuDNN SDPA forward figures at both widths on a Blackwell GPU (non-causal, 1k tokens,
// batch 32; Dao-AILab/flash-attention PR #2605 benchmark tables, shared/reference/microbench.json).
// Hopper's cuDNN curves give 0.70 for the same pair (288 / 410 causal at 1k): a head of 64 fills
// half a tensor-core tile in the P.V product on both generations.
constexpr double kBlackwellHead64 = 979.5 / 1428.0;
constexpr Row kBlackwellCudnn128 = {211.4, 416.0, 615.3, 902.6, 1081.8, 1228.7};
constexpr Row scaled(const Row& r, double f) { return {r[0] * f, r[1] * f, r[2] * f, r[3] * f, r[4] * f, r[5] * f}; }
constexpr Curve kBlackwellCudnn = {2, {6, 7, 0}, {scaled(kBlackwellCudnn128, kBlackwellHead64), kBlackwellCudnn128, Row{}}};
constexpr Curve kBlackwellFlash2 = {1, {7, 0, 0}, {Row{75.5, 115.4, 212.1, 290.3, 337.8, 357.9}, Row{}, Row{}}};

double along_seq(const Row& row, double log2_seq) {
  const double x = std::clamp(log2_seq - kFirstLog2Seq, 0.0, static_cast<double>(kSeqs - 1));
  const int i = std::min(static_cast<int>(x), kSeqs - 2);
  const double f = x - i;
  return row[i] * (1.0 - f) + row[i + 1] * f;
}

double tflops(const Curve& c, double log2_head, double log2_seq) {
  if (c.widths == 1) return along_seq(c.tflops[0], log2_seq);  // one width measured: every head size alike
  const double h = std::clamp(log2_head, c.log2_head[0], c.log2_head[c.widths - 1]);
  int i = 0;
  while (i + 2 < c.widths && h > c.log2_head[i + 1]) ++i;
  const double f = (h - c.log2_head[i]) / (c.log2_head[i + 1] - c.log2_head[i]);
  return along_seq(c.tflops[i], log2_seq) * (1.0 - f) + along_seq(c.tflops[i + 1], log2_seq) * f;
}

}  // namespace

double attention_shape_factor(AttentionCurve curve, int64_t head_dim, double seq) {
  const Curve* c = curve == AttentionCurve::kA100Flash2     ? &kA100Flash2
                   : curve == AttentionCurve::kHopperFlash2 ? &kHopperFlash2
                   : curve == AttentionCurve::kHopperCudnn  ? &kHopperCudnn
                   : curve == AttentionCurve::kBlackwellCudnn  ? &kBlackwellCudnn
                   : curve == AttentionCurve::kBlackwellFlash2 ? &kBlackwellFlash2
                                                            : nullptr;
  if (c == nullptr || head_dim <= 0 || !(seq > 0)) return 1.0;
  return tflops(*c, std::log2(static_cast<double>(head_dim)), std::log2(seq)) / tflops(*c, 7.0, 12.0);
}

}  // namespace trainsim
