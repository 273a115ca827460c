// Reference efficiencies of the catalog GPUs (shared/reference/microbench.json and
// microbench-moe-blackwell-amd.json records).
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
// attention on Hopper (Transformer Engine): 506 TFLOP/s forward + backward as 3.5 / (1/fwd +
// 2.5/bwd) (fwd 538, bwd 494), timed on an H200 through PyTorch 2.11's cuDNN SDPA backend (cuDNN
// 9.19), batch 4 x 32 heads, 2026-11-28 (bench/gpu_kernels.py;
// reports/measured/2026-11-28-h200-sxm-141gb/kernels.jsonl; NVIDIA/cudnn-frontend@3929da2
// results/h200_919_only_cudnn, cuDNN 9.19 on an H200 at Llama 3.1's GQA shape, batch 1: fwd 591,
// bwd 474, 500 fwd + bwd, agrees within 1.2%). The H100 takes the same figure: the
// same GH100 die and clocks, and the kernel is compute-bound at this shape. It replaces 477, which
// assumed cuDNN's backward gains over FlashAttention-2's as much as its forward (518 / 319).
// Frameworks whose attention is PyTorch SDPA (torchtitan, LLM Foundry) run its FlashAttention-2
// backend on Hopper: 270 TFLOP/s (fwd 295, bwd 262) at the same shape through PyTorch 2.11's SDPA
// on the same H200 (kernels.jsonl as above). It replaces the flash-attn package's 294 (the chart
// above): the kernel PyTorch ships, timed as those frameworks call it.
constexpr double kA100Attention = 173.0 / 312.0;
constexpr double kHopperAttention = 506.0 / 989.0;
constexpr double kHopperFlash2Attention = 270.0 / 989.0;

// Blackwell (shared/reference/microbench-moe-blackwell-amd.json, "MAMF" and "attention" records;
// microbench.json for the B200's MAMF), each over the dense peak of its `spec` record:
// MAMF (mamf-finder, stas00/ml-engineering@744d01e compute/accelerator/README.md): B200-SXM BF16
// 1745.0 / 2250, FP8 3432.5 / 4500; GB200 BF16 1822.0 / 2500, FP8 3615.6 / 5000;
// B300-SXM FP8 3353.3 / 4500. No B300 BF16 and no GB300 MAMF record exists: those stand-ins are
// named in the output (kB300, kGB300 below).
constexpr double kB200MamfBf16 = 1745.0 / 2250.0;
constexpr double kB200MamfFp8 = 3432.5 / 4500.0;
constexpr double kGB200MamfBf16 = 1822.0 / 2500.0;
constexpr double kGB200MamfFp8 = 3615.6 / 5000.0;
constexpr double kB300MamfFp8 = 3353.3 / 4500.0;
// Block-scaled GEMMs (microbench.json, TransformerEngine@8f2e635 docs/examples/gemm_profiling:
// benchmark_gemm.py --pre-quantize, the GEMM kernels alone, on a B300 SXM6, the 12 GEMMs of a
// layer with hidden 4096, FFN 16384, 15,872 tokens): per-tensor FP8 6.812 ms, MXFP8 7.161 ms. The
// MXFP8 kernels run at 0.951 of the per-tensor FP8 ones; applied to every Blackwell part's FP8 MAMF.
constexpr double kMxfp8OverFp8 = 6.812 / 7.161;
// NVFP4 kernels in the same run: 3.764 ms, 1.81x the per-tensor FP8 ones. An NVFP4 GEMM is priced
// at 1.81x the GPU's FP8 GEMM rate (MAMF FP8), whatever its FP4 peak: on the B300 (FP4 peak 3.3x
// its FP8 peak) Transformer Engine's NVFP4 kernels reach 1.81x at training shapes. cuBLASLt's
// square FP4 GEMMs go further (Azure/AI-benchmarking-guide@2a370be, ND GB200 v6: at most 7,627.6
// TFLOP/s of 10,000 at 16384^3, 2.1x the GB200's FP8 MAMF; microbench-moe-blackwell-amd.json),
// but that rate is not what the NVFP4 linears of a training run see (docs/cost-model.md).
constexpr double kNvfp4OverFp8 = 6.812 / 3.764;
// Causal attention, head dim 128, sequence 4096, BF16, forward + backward (backward FLOPs 2.5 x the
// forward's in both CSVs' conventions, so fwd+bwd TFLOP/s = 3.5 / (1/fwd + 2.5/bwd)), every part at
// one cuDNN release, 9.19 -- the release of the Hopper figure above -- so that two GPUs differ by
// their hardware and not by the library each happened to be timed with: on the GB300 the same
// benchmark and shape (bf16 rows of sdpa_fp8_benchmark_results_NVIDIA_GB300.csv, 128 / 8 heads,
// batch 1) gave fwd 1445.205, bwd 941.941 with cuDNN 9.13.1 (cudnn-frontend@0b1577c) and fwd 1680,
// bwd 1110 with cuDNN 9.17.0 (@d48a60e): +16% and +18% from the library alone.
// GB200 and GB300: cuDNN 9.19.1 (cudnn-frontend 1.19.0), Llama-3.1 GQA (64 q / 8 kv heads, batch 1,
// top-left causal; NVIDIA/cudnn-frontend@afa9f7c benchmark/sdpa_benchmark_training/results/
// gb200_919_only_cudnn/llama3.1_20260226_174648.csv and gb300_919_only_cudnn/llama3.1_20260226_185510.csv,
// the same week and script as the h200_919_only_cudnn rows that agree with the H200 measured here):
// GB200 fwd 1335, bwd 1132; GB300 fwd 1672, bwd 1195 TFLOP/s.
// B200: no cuDNN 9.19 record exists. Its one record is cuDNN 9.13.1 called directly
// (NVIDIA/cudnn-frontend@0b1577c benchmark/sdpa_benchmark_training/artifacts/
// sdpa_fp8_benchmark_results_NVIDIA_B200.csv, bf16 rows, Llama-3.1-405B GQA 128 / 8 heads, batch 1):
// fwd 1141.14, bwd 832.907. It is carried to 9.19 and the 64-head shape by what the same move did
// on the GB300, measured with both (its 9.13.1 row in the same CSV family, ..._NVIDIA_GB300.csv at
// 0b1577c: fwd 1445.205, bwd 941.941; its 9.19.1 row above): fwd x 1672 / 1445.205, bwd x 1195 /
// 941.941. The result, 1,121 fwd+bwd, is 0.947 of the GB200's 1,183, as the two parts' MAMF BF16 is
// 0.958 (1745.0 / 1822.0): the same die, each at one release.
// FlashAttention-2 (flash_attn 2.7.4.post1, the PyTorch-SDPA frameworks' kernel) on B200-SXM, same
// CSV as the B200 cuDNN rows: fwd 342.99, bwd 273.484 (it has no Blackwell kernels).
constexpr double fwd_bwd_tflops(double fwd, double bwd) { return 3.5 / (1.0 / fwd + 2.5 / bwd); }
constexpr double kB200CudnnFwd = 1141.14 * 1672.0 / 1445.205, kB200CudnnBwd = 832.907 * 1195.0 / 941.941;
constexpr double kGB200CudnnFwd = 1335.0, kGB200CudnnBwd = 1132.0;
constexpr double kGB300CudnnFwd = 1672.0, kGB300CudnnBwd = 1195.0;
constexpr double kB200Flash2Fwd = 342.99, kB200Flash2Bwd = 273.484;

// A record's forward and backward rates over its fwd+bwd rate (ReferenceEfficiency::attention_forward).
struct AttentionPasses {
  double forward = 1.0, backward = 1.0;
};
constexpr AttentionPasses passes(double fwd, double bwd) { return {fwd / fwd_bwd_tflops(fwd, bwd), bwd / fwd_bwd_tflops(fwd, bwd)}; }
constexpr AttentionPasses kUnsplit{};
// Hopper: the H200 measurements above (cuDNN fwd 538, bwd 494; FlashAttention-2 through SDPA fwd
// 295, bwd 262). Blackwell: the records above at cuDNN 9.19 and FlashAttention-2's B200 row.
constexpr AttentionPasses kHopperPasses = passes(538.0, 494.0);
constexpr AttentionPasses kHopperFlash2Passes = passes(295.0, 262.0);
constexpr AttentionPasses kB200Passes = passes(kB200CudnnFwd, kB200CudnnBwd);
constexpr AttentionPasses kGB200Passes = passes(kGB200CudnnFwd, kGB200CudnnBwd);
constexpr AttentionPasses kGB300Passes = passes(kGB300CudnnFwd, kGB300CudnnBwd);
constexpr AttentionPasses kBlackwellFlash2Passes = passes(kB200Flash2Fwd, kB200Flash2Bwd);
constexpr double kB200Attention = fwd_bwd_tflops(kB200CudnnFwd, kB200CudnnBwd) / 2250.0;
constexpr double kGB200Attention = fwd_bwd_tflops(kGB200CudnnFwd, kGB200CudnnBwd) / 2500.0;
constexpr double kGB300Attention = fwd_bwd_tflops(kGB300CudnnFwd, kGB300CudnnBwd) / 2500.0;
constexpr double kB200Flash2Attention = fwd_bwd_tflops(kB200Flash2Fwd, kB200Flash2Bwd) / 2250.0;

// AMD Instinct (shared/reference/microbench-moe-blackwell-amd.json, "gemm" records), each over the
// GPU's AMD datasheet dense peak, the catalog's (MI300X and MI325X BF16 1,307.4, FP8 2,614.9;
// MI355X 2,516.6 and 5,033.2; the references' spec records round them to 1,300 / 2,610 / 2,500 /
// 5,000), so a GEMM is priced at the measured rate itself. BF16: MAMF (mamf-finder with PyTorch
// TunableOp, stas00/ml-engineering compute/accelerator/README.md) MI300X 668.4, MI325X 784.9,
// MI355X 1565.0. FP8 on CDNA 3 has no mamf-finder record, only AMD's hipBLASLt Max-Achievable FLOPs
// (MAF; f8_fnuz): MI300X 1273, MI325X 1519. AMD's tool reaches more than mamf-finder on the same
// GPU in BF16 (MAF 708 against MAMF 668.4 on the MI300X, 843 against 784.9 on the MI325X), so each
// FP8 MAF is taken at its GPU's BF16 MAMF / MAF (an extrapolation, named in the output). MI355X
// FP8: hipBLASLt e4m3fn at 8192^3, 3130.21 (one shape, a lower bound of a shape search; its 4096^3
// run reaches 2750.42). No attention kernel on any AMD part is in the references: the fused
// attention is taken at the H100's cuDNN attention / BF16 MAMF (0.637) times the GPU's BF16 MAMF,
// with the Hopper cuDNN curve, and named as a stand-in.
constexpr double kMI300XMamfBf16 = 668.4 / 1307.4;
constexpr double kMI325XMamfBf16 = 784.9 / 1307.4;
constexpr double kMI355XMamfBf16 = 1565.0 / 2516.6;
constexpr double kMI300XMamfFp8 = 1273.0 * (668.4 / 708.0) / 2614.9;
constexpr double kMI325XMamfFp8 = 1519.0 * (784.9 / 843.0) / 2614.9;
constexpr double kMI355XMamfFp8 = 3130.21 / 5033.2;
constexpr double kAttentionOverMamfH100 = kHopperAttention / kH100MamfBf16;

// One reference set: what was measured on that GPU (GpuCapabilities::reference_family picks it).
struct ReferenceRecords {
  const char* gpu;               // "H100": the GPU the records were measured on
  bool anchor;                   // the A100: the fitted fractions' own GPU, every ratio 1
  double mamf_16bit;             // MAMF / dense peak, BF16 (FP16 alike)
  double mamf_fp8;               // MAMF / dense peak, FP8; 0: no FP8 record
  bool block_scaled;             // MXFP8 and NVFP4 GEMMs priced from the FP8 MAMF (kMxfp8OverFp8, kNvfp4OverFp8)
  double attention;              // the framework's fused attention (cuDNN on Hopper, FlashAttention-2 on the A100) / peak
  double attention_flash2;       // FlashAttention-2 (PyTorch SDPA) / peak
  AttentionCurve curve, curve_flash2;
  AttentionPasses passes, passes_flash2;  // each pass's rate over the pair's
  const char* attention_label;   // how `attention` was obtained, for the output
  // The figures of this set that are another GPU's ratio applied to this GPU's datasheet peaks
  // (datasheet extrapolations), named in the output; "" when every figure was measured on it.
  const char* stand_ins;
};

constexpr const char* kCudnnH200 = "cuDNN fused attention (measured on the H200)";
constexpr const char* kCudnnMeasured = "cuDNN fused attention";

constexpr ReferenceRecords kA100{"A100", true, kA100Mamf, 0.0, false, kA100Attention, kA100Attention,
                                 AttentionCurve::kA100Flash2, AttentionCurve::kA100Flash2, kUnsplit, kUnsplit, "", ""};
constexpr ReferenceRecords kH100{"H100", false, kH100MamfBf16, kH100MamfFp8, false, kHopperAttention, kHopperFlash2Attention,
                                 AttentionCurve::kHopperCudnn, AttentionCurve::kHopperFlash2, kHopperPasses, kHopperFlash2Passes,
                                 kCudnnH200, ""};
// H200 BF16 GEMMs: the H100's record (the same GH100 die and clocks).
constexpr ReferenceRecords kH200{"H200", false, kH100MamfBf16, kH200MamfFp8, false, kHopperAttention, kHopperFlash2Attention,
                                 AttentionCurve::kHopperCudnn, AttentionCurve::kHopperFlash2, kHopperPasses, kHopperFlash2Passes,
                                 kCudnnH200, ""};
// Blackwell: the attention curves (how the rate moves with sequence) are the B200's for every part.
constexpr ReferenceRecords kB200{"B200", false, kB200MamfBf16, kB200MamfFp8, true, kB200Attention, kB200Flash2Attention,
                                 AttentionCurve::kBlackwellCudnn, AttentionCurve::kBlackwellFlash2, kB200Passes,
                                 kBlackwellFlash2Passes, kCudnnMeasured, ""};
constexpr ReferenceRecords kGB200{"GB200", false, kGB200MamfBf16, kGB200MamfFp8, true, kGB200Attention, kB200Flash2Attention,
                                  AttentionCurve::kBlackwellCudnn, AttentionCurve::kBlackwellFlash2, kGB200Passes,
                                  kBlackwellFlash2Passes, kCudnnMeasured,
                                  "FlashAttention-2 is the B200's ratio (no GB200 fwd+bwd record)"};
constexpr ReferenceRecords kB300{"B300", false, kB200MamfBf16, kB300MamfFp8, true, kGB300Attention, kB200Flash2Attention,
                                 AttentionCurve::kBlackwellCudnn, AttentionCurve::kBlackwellFlash2, kGB300Passes,
                                 kBlackwellFlash2Passes, kCudnnMeasured,
                                 "no B300 BF16 MAMF or attention record: BF16 MAMF is the B200's ratio, cuDNN attention "
                                 "the GB300's, FlashAttention-2 the B200's"};
constexpr ReferenceRecords kGB300{"GB300", false, kGB200MamfBf16, kGB200MamfFp8, true, kGB300Attention, kB200Flash2Attention,
                                  AttentionCurve::kBlackwellCudnn, AttentionCurve::kBlackwellFlash2, kGB300Passes,
                                  kBlackwellFlash2Passes, kCudnnMeasured,
                                  "no GB300 MAMF record: BF16 and FP8 MAMF are the GB200's ratios, FlashAttention-2 the "
                                  "B200's"};

constexpr const char* kAmdAttention = "fused attention at the H100's attention / GEMM ratio";
constexpr ReferenceRecords kMI300X{"MI300X", false, kMI300XMamfBf16, kMI300XMamfFp8, false,
                                   kMI300XMamfBf16 * kAttentionOverMamfH100, kMI300XMamfBf16 * kAttentionOverMamfH100,
                                   AttentionCurve::kHopperCudnn, AttentionCurve::kHopperCudnn, kUnsplit, kUnsplit, kAmdAttention,
                                   "FP8 is AMD's hipBLASLt MAF at the BF16 MAMF / MAF ratio; attention has no AMD record "
                                   "(the H100's attention / GEMM ratio and curve)"};
constexpr ReferenceRecords kMI325X{"MI325X", false, kMI325XMamfBf16, kMI325XMamfFp8, false,
                                   kMI325XMamfBf16 * kAttentionOverMamfH100, kMI325XMamfBf16 * kAttentionOverMamfH100,
                                   AttentionCurve::kHopperCudnn, AttentionCurve::kHopperCudnn, kUnsplit, kUnsplit, kAmdAttention,
                                   "FP8 is AMD's hipBLASLt MAF at the BF16 MAMF / MAF ratio; attention has no AMD record "
                                   "(the H100's attention / GEMM ratio and curve)"};
constexpr ReferenceRecords kMI355X{"MI355X", false, kMI355XMamfBf16, kMI355XMamfFp8, false,
                                   kMI355XMamfBf16 * kAttentionOverMamfH100, kMI355XMamfBf16 * kAttentionOverMamfH100,
                                   AttentionCurve::kHopperCudnn, AttentionCurve::kHopperCudnn, kUnsplit, kUnsplit, kAmdAttention,
                                   "FP8 is one hipBLASLt shape (8192^3); attention has no AMD record (the H100's "
                                   "attention / GEMM ratio and curve)"};

const ReferenceRecords* records_of(ReferenceFamily family) {
  switch (family) {
    case ReferenceFamily::kNone: return nullptr;
    case ReferenceFamily::kA100: return &kA100;
    case ReferenceFamily::kH100: return &kH100;
    case ReferenceFamily::kH200: return &kH200;
    case ReferenceFamily::kB200: return &kB200;
    case ReferenceFamily::kGB200: return &kGB200;
    case ReferenceFamily::kB300: return &kB300;
    case ReferenceFamily::kGB300: return &kGB300;
    case ReferenceFamily::kMI300X: return &kMI300X;
    case ReferenceFamily::kMI325X: return &kMI325X;
    case ReferenceFamily::kMI355X: return &kMI355X;
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
  const bool fp8 = fp8_family(precision) && records->mamf_fp8 > 0;
  const bool fp4 = precision == Precision::kNvfp4 && records->block_scaled && gpu.peak_fp4_flops_per_s > 0;
  if (tensor16) r.gemm_ratio = records->mamf_16bit / kA100.mamf_16bit;
  if (fp8) r.gemm_ratio = records->mamf_fp8 * (precision == Precision::kMxfp8 ? kMxfp8OverFp8 : 1.0) / kA100.mamf_16bit;
  // Over the FP4 peak the cost model multiplies by: 1.81x the FP8 MAMF rate.
  if (fp4) r.gemm_ratio = records->mamf_fp8 * kNvfp4OverFp8 * gpu.peak_fp8_flops_per_s / gpu.peak_fp4_flops_per_s / kA100.mamf_16bit;
  r.attention_ratio = (flash2_attention ? records->attention_flash2 : records->attention) / kA100.attention;
  r.attention_curve = flash2_attention ? records->curve_flash2 : records->curve;
  const AttentionPasses& split = flash2_attention ? records->passes_flash2 : records->passes;
  r.attention_forward = split.forward;
  r.attention_backward = split.backward;
  const std::string gemm = fp4                                   ? "MAMF FP8 x 1.81 (NVFP4 kernels, B300)"
                           : fp8 && precision == Precision::kMxfp8 ? "MAMF FP8 x 0.951 (MXFP8 kernels, B300)"
                           : fp8                                  ? "MAMF FP8"
                           : tensor16                             ? "MAMF BF16"
                                                                  : "MAMF none for this precision";
  r.source = std::string(records->gpu) + " reference: " + gemm +
             (flash2_attention ? ", FlashAttention-2 (PyTorch SDPA)" : std::string(", ") + records->attention_label) +
             (*records->stand_ins != '\0' ? std::string("; datasheet extrapolation: ") + records->stand_ins : "");
  return r;
}

}  // namespace trainsim
