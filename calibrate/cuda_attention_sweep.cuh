// Causal attention timings of the CUDA runtime's own kernels (kernels/cuda/kernels.cuh),
// bf16, forward and backward, over heads (batch 1, MHA), sequence length and head_dim: table
// "trainsim-runtime-flash" (flash_attention_forward / _backward) and "trainsim-runtime-unfused"
// (unfused_attention_forward / _backward: strided-batched cuBLAS, causal softmax, s x s bf16
// probabilities kept). Points carry `backward`; the simulator prices each pass from its own points.
#pragma once

#include <vector>

#include "calibrate/cuda_context.cuh"
#include "common/hardware_profile.hpp"

namespace trainsim {

std::vector<AttentionTable> measure_attention(const GpuContext& context, bool quick);

}  // namespace trainsim
