// Reference efficiencies of the catalog GPUs (shared/reference/microbench.json records).
#include "sim/reference_efficiency.hpp"

namespace trainsim {

namespace {

// Maximum achievable matmul TFLOP/s (mamf-finder, stas00/ml-engineering@744d01e
// compute/accelerator/README.md) over the dense peak: A100-SXM BF16 271.2 / 312; H100-SXM5 BF16
// 794.5 / 989, FP8 1402.6 / 1979; H200-SXM FP8 1453.4 / 1979. H200 BF16 has no record: the same
// GH100 die and clocks as the H100, so the H100 figure stands in for it.
constexpr double kA100Mamf = 271.2 / 312.0;
constexpr double kH100MamfBf16 = 794.5 / 989.0;
constexpr double kH100MamfFp8 = 1402.6 / 1979.0;
constexpr double kH200MamfFp8 = 1453.4 / 1979.0;

// Causal attention, head dim 128, sequence 4096, forward + backward: FlashAttention-2 on
// A100-SXM4-80GB 173 TFLOP/s of 312 and on H100-SXM5 294 of 989 (Dao-AILab/flash-attention@0251105
// assets/flash2_{a100,h100}_fwd_bwd_benchmark.png). Megatron-Core and NeMo run cuDNN's fused
// attention on Hopper (Transformer Engine): its forward is 518 TFLOP/s where FlashAttention-2's is
// 319 on the same chart (assets/flash3_fp16_fwd.png); the backward is taken to gain as much (no
// cuDNN backward figure in the reference: an assumption), so 294 x 518 / 319 = 477 TFLOP/s.
constexpr double kA100Attention = 173.0 / 312.0;
constexpr double kHopperAttention = 294.0 * 518.0 / 319.0 / 989.0;
constexpr double kHopperFlash2Attention = 294.0 / 989.0;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

ReferenceEfficiency reference_efficiency(const GpuSpec& gpu, Precision precision, bool flash2_attention) {
  ReferenceEfficiency r;
  const bool tensor16 = precision == Precision::kBf16 || precision == Precision::kFp16;
  if (starts_with(gpu.name, "a100")) {
    r.attention_curve = AttentionCurve::kA100Flash2;
    r.source = "A100 reference (the anchor: ratios 1)";
  } else if (starts_with(gpu.name, "h100") || starts_with(gpu.name, "h200")) {
    const bool h200 = starts_with(gpu.name, "h200");
    if (tensor16) r.gemm_ratio = kH100MamfBf16 / kA100Mamf;
    if (precision == Precision::kFp8) r.gemm_ratio = (h200 ? kH200MamfFp8 : kH100MamfFp8) / kA100Mamf;
    r.attention_ratio = (flash2_attention ? kHopperFlash2Attention : kHopperAttention) / kA100Attention;
    r.attention_curve = flash2_attention ? AttentionCurve::kHopperFlash2 : AttentionCurve::kHopperCudnn;
    r.source = std::string(h200 ? "H200" : "H100") + " reference: MAMF " +
               (precision == Precision::kFp8 ? "FP8" : tensor16 ? "BF16" : "none for this precision") +
               (flash2_attention ? ", FlashAttention-2 (PyTorch SDPA)" : ", cuDNN fused attention (derived)");
  }
  return r;
}

}  // namespace trainsim
