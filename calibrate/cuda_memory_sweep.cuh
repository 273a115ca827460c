// Memory-bound measurements: device-to-device copy, the CUDA runtime's own layer norm, causal
// softmax (of its unfused attention), GELU, SwiGLU and AdamW kernels (kernels/cuda), and
// pinned host <-> device copies, over sizes of 1 MiB .. 1 GiB.
#pragma once

#include <vector>

#include "calibrate/cuda_context.cuh"
#include "common/hardware_profile.hpp"

namespace trainsim {

// Tables named copy, layernorm, softmax, gelu, swiglu, adam, h2d, d2h. For the kernels `bytes` is
// what they read plus what they write, counted as the simulator counts them (softmax: the whole
// score matrix once each way; adam: 28 bytes per parameter); for h2d and d2h it is the bytes that
// cross the link.
std::vector<MemoryBoundTable> measure_memory_bound(const GpuContext& context, bool quick);

}  // namespace trainsim
