// Attention forward timings: our fused kernel ("trainsim-flash-v1") and the unfused path
// ("unfused-cublas": strided-batched cuBLAS Q K^T, our softmax, P V), bf16, over batch-heads,
// sequence length, head_dim and causal. No backward (noted in the profile).
#pragma once

#include <vector>

#include "calibrate/cuda_context.cuh"
#include "common/hardware_profile.hpp"

namespace trainsim {

std::vector<AttentionTable> measure_attention(const GpuContext& context, bool quick);

}  // namespace trainsim
