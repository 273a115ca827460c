// Initial weights drawn from counter-based normal draws: element i of tensor `name` depends only
// on (seed, name, i), so large tensors are filled by several threads and every parallel layout
// slices the same numbers out of the same full tensor.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::runtime {

using cpu::Matrix;  // host tensors are the CPU kernels' (kernels/cpu/cpu_kernels.hpp)

// A (rows, cols) tensor of N(0, stddev^2) values for `name` under `seed`.
Matrix normal_matrix(const std::string& name, uint64_t seed, int64_t rows, int64_t cols, float stddev);

}  // namespace trainsim::runtime
