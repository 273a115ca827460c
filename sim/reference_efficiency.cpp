// Reference efficiencies of the catalog GPUs (shared/reference/microbench.json records).
#include "sim/reference_efficiency.hpp"

#include "common/errors.hpp"

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

// One reference set: what was measured on that GPU (GpuCapabilities::reference_family picks it).
struct ReferenceRecords {
  const char* gpu;               // "H100": the GPU the records were measured on
  bool anchor;                   // the A100: the fitted fractions' own GPU, every ratio 1
  double mamf_16bit;             // MAMF / dense peak, BF16 (FP16 alike)
  double mamf_fp8;               // MAMF / dense peak, FP8; 0: no FP8 record
  double attention;              // the framework's fused attention (cuDNN on Hopper, FlashAttention-2 on the A100) / peak
  double attention_flash2;       // FlashAttention-2 (PyTorch SDPA) / peak
  AttentionCurve curve, curve_flash2;
};

constexpr ReferenceRecords kA100{"A100", true, kA100Mamf, 0.0, kA100Attention, kA100Attention,
                                 AttentionCurve::kA100Flash2, AttentionCurve::kA100Flash2};
constexpr ReferenceRecords kH100{"H100", false, kH100MamfBf16, kH100MamfFp8, kHopperAttention, kHopperFlash2Attention,
                                 AttentionCurve::kHopperCudnn, AttentionCurve::kHopperFlash2};
// H200 BF16 and attention: the H100's records (the same GH100 die and clocks).
constexpr ReferenceRecords kH200{"H200", false, kH100MamfBf16, kH200MamfFp8, kHopperAttention, kHopperFlash2Attention,
                                 AttentionCurve::kHopperCudnn, AttentionCurve::kHopperFlash2};

const ReferenceRecords* records_of(ReferenceFamily family) {
  switch (family) {
    case ReferenceFamily::kNone: return nullptr;
    case ReferenceFamily::kA100: return &kA100;
    case ReferenceFamily::kH100: return &kH100;
    case ReferenceFamily::kH200: return &kH200;
  }
  TRAINSIM_ASSERT(false, "unhandled reference family");
  return nullptr;
}

}  // namespace

ReferenceEfficiency reference_efficiency(const GpuSpec& gpu, Precision precision, bool flash2_attention) {
  ReferenceEfficiency r;
  const ReferenceRecords* records = records_of(gpu.capabilities.reference_family);
  if (records == nullptr) return r;  // the CPU host: its measured profile prices its ops
  if (records->anchor) {
    r.attention_curve = records->curve;
    r.source = std::string(records->gpu) + " reference (the anchor: ratios 1)";
    return r;
  }
  const bool tensor16 = precision == Precision::kBf16 || precision == Precision::kFp16;
  if (tensor16) r.gemm_ratio = records->mamf_16bit / kA100.mamf_16bit;
  if (precision == Precision::kFp8 && records->mamf_fp8 > 0) r.gemm_ratio = records->mamf_fp8 / kA100.mamf_16bit;
  r.attention_ratio = (flash2_attention ? records->attention_flash2 : records->attention) / kA100.attention;
  r.attention_curve = flash2_attention ? records->curve_flash2 : records->curve;
  r.source = std::string(records->gpu) + " reference: MAMF " +
             (precision == Precision::kFp8 && records->mamf_fp8 > 0 ? "FP8" : tensor16 ? "BF16" : "none for this precision") +
             (flash2_attention ? ", FlashAttention-2 (PyTorch SDPA)" : ", cuDNN fused attention (derived)");
  return r;
}

}  // namespace trainsim
