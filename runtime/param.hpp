// One trainable tensor of a stage, with its gradient and how it is laid out over the ranks: split
// over TP, partial over TP with sequence parallelism, or an MoE expert's (held by one EP rank and
// reduced over the expert-data-parallel ranks instead of dp x cp). No behaviour here.
#pragma once

#include <string>

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::runtime {

using cpu::Matrix;  // host tensors are the CPU kernels' (kernels/cpu/cpu_kernels.hpp)

struct Param {
  std::string name;
  Matrix value;
  Matrix grad;
  bool tp_split = false;        // a different slice on each TP rank
  bool sp_partial_grad = false; // with SP each rank's gradient covers only its tokens: sum over TP
  bool expert = false;          // an MoE expert's: gradients reduced over the expert-DP ranks only
};

}  // namespace trainsim::runtime
