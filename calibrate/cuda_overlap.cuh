// How much a GEMM slows down while a collective runs beside it on the same GPU (another stream):
// the input to the simulator's compute / communication overlap. Needs two GPUs or more.
#pragma once

#include "calibrate/cuda_collectives.cuh"
#include "calibrate/cuda_context.cuh"
#include "common/hardware_profile.hpp"

namespace trainsim {

// A bf16 8192^3 GEMM on GPU 0, alone and while 256 MiB all-reduces run on every GPU.
OverlapPoint measure_gemm_beside_all_reduce(const GpuContext& context, const NcclGroup& group);

}  // namespace trainsim
