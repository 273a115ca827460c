// Fused attention's efficiency by shape: how much faster or slower a causal attention kernel runs
// at a head size and sequence length than at the shape the reference efficiency is taken at (head
// dim 128, sequence 4096), from the measured FlashAttention-2 and cuDNN curves of
// shared/reference/microbench.md §2 (short sequences and narrow heads reach a lower fraction of
// peak: on H100, FlashAttention-2 at 1k tokens and head dim 64 runs at 192 TFLOP/s, at 4k / 128 at 294).
#pragma once

#include <cstdint>

namespace trainsim {

// Which measured curve a GPU's fused attention follows (sim/reference_efficiency.cpp picks it).
enum class AttentionCurve {
  kNone,           // no measurement: every shape at the reference efficiency
  kA100Flash2,     // FlashAttention-2 fwd+bwd on A100-SXM4-80GB
  kHopperFlash2,   // FlashAttention-2 fwd+bwd on H100-SXM5 (PyTorch SDPA frameworks)
  kHopperCudnn,    // cuDNN fused attention forward on H100-SXM5 (Transformer Engine frameworks)
  kBlackwellCudnn,   // cuDNN fused attention fwd+bwd on B200-SXM (every Blackwell part)
  kBlackwellFlash2,  // FlashAttention-2 fwd+bwd on B200-SXM (PyTorch SDPA frameworks)
};

// TFLOP/s of causal attention at (head_dim, seq) over TFLOP/s at (128, 4096) on `curve`: linear in
// log2 of the sequence between the measured 512 .. 16k and in log2 of the head size between the
// measured widths, clamped at both ends.
double attention_shape_factor(AttentionCurve curve, int64_t head_dim, double seq);

}  // namespace trainsim
