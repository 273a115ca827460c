// Megatron's tensor-parallel splits of a full tensor (Shoeybi et al. 2019, §3): the rows a TP rank
// holds of a row-parallel weight (attention output, FC2, an expert's FC2, the vocabulary), and the
// columns of a column-parallel one, taken block by block from a fused weight ([Q | K | V], SwiGLU's
// [gate | up]) so that each rank's slice is again [its Q | its K | its V]. Pure functions on whole
// tensors; what is split over which group is runtime/cpu/cpu_model's and runtime/stage_moe's.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::runtime {

using cpu::Matrix;  // host tensors are the CPU kernels' (kernels/cpu/cpu_kernels.hpp)

// Row block `index` of `parts` equal blocks of `full`. Requires parts | rows.
Matrix row_slice(const Matrix& full, int64_t parts, int64_t index);

// The column blocks of `full` are `widths` wide (summing to its columns); returns share `index` of
// `parts` of every block, concatenated in block order. Requires parts | every width.
Matrix block_slice(const Matrix& full, const std::vector<int64_t>& widths, int64_t parts, int64_t index);

}  // namespace trainsim::runtime
