// How much of its datasheet peak each catalog GPU reaches on the best GEMM and on fused attention,
// from public microbenchmarks (shared/reference/microbench.json), relative to the A100 the
// datasheet model's constants were first fitted on. The cost model scales its fitted fractions by
// these ratios, so an H100 or H200 prediction rests on H100/H200 measurements instead of being an
// A100 x the peak ratio. Which record set applies is the GPU's catalog capability
// (GpuCapabilities::reference_family), never its name. docs/cost-model.md has the table and each
// figure's source.
#pragma once

#include <string>

#include "plan/parallel_plan.hpp"
#include "sim/attention_shape.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

struct ReferenceEfficiency {
  double gemm_ratio = 1.0;       // GPU's MAMF / peak at this precision over the A100's BF16 MAMF / peak
  double attention_ratio = 1.0;  // fused attention fwd+bwd / peak over the A100's FlashAttention-2
  // Each pass's rate over the fwd+bwd rate at the reference shape (forward and backward kernels run
  // at different rates: on the H200 cuDNN's forward 538, backward 494, together 506 TFLOP/s). They
  // keep the pair's time: 1/forward + 2.5/backward = 3.5 (the backward counts 2.5x the forward's
  // FLOPs). 1 and 1 where no record splits the passes (the A100, AMD parts).
  double attention_forward = 1.0, attention_backward = 1.0;
  // How the kernel's efficiency moves with head size and sequence around the reference shape.
  AttentionCurve attention_curve = AttentionCurve::kNone;
  std::string source;            // what the ratios rest on ("" = no reference, the CPU host: ratios 1)
};

// `flash2_attention`: the framework runs FlashAttention-2 (PyTorch SDPA) rather than cuDNN's fused
// attention on Hopper (FrameworkPreset::flash2_attention_on_hopper).
ReferenceEfficiency reference_efficiency(const GpuSpec& gpu, Precision precision, bool flash2_attention = false);

}  // namespace trainsim
