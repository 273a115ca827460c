// The GEMM sweep: every (m, n, k) of a grid, for one dtype, timed with cuBLASLt on cold inputs
// and checked against an exact reference on sampled output entries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/cuda_context.cuh"
#include "calibrate/cuda_lt_matmul.cuh"
#include "common/hardware_profile.hpp"

namespace trainsim {

struct GemmGrid {
  std::vector<int64_t> m_values, n_values, k_values;  // increasing
};

// Shapes of transformer layers under tensor parallelism: m = tokens, n and k = hidden sizes
// (and their 1/tp shares), 256 .. 65536. Quick: a 3 x 4 x 4 subset.
GemmGrid gemm_grid(bool quick);

// Trims the grid's largest values first if its largest shape does not fit in free GPU memory
// (and says so in `notes`); every combination of what remains is a point.
GemmTable measure_gemm_table(const GpuContext& context, GemmDtype dtype, GemmGrid grid,
                             std::vector<std::string>& notes);

// Runs `matmul` once on (a, b) into d and compares sampled entries of d with an fp64 reference
// (inputs filled by fill_uniform); a wrong entry is a DeviceError.
void check_gemm(const GpuContext& context, const LtMatmul& matmul, const void* a, const void* b, void* d);

}  // namespace trainsim
