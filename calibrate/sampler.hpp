// Timing the nvbench way: warm up, then take samples until the spread is small or a cap is hit,
// and keep median / p10 / p90. The caller's `run_once` times one sample (CUDA events on a GPU,
// a steady clock on a CPU) and returns seconds.
#pragma once

#include <functional>

#include "common/hardware_profile.hpp"

namespace trainsim {

struct SamplerOptions {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double max_total_s = 0.5;          // stop sampling a case after this much measured time
  double target_rel_spread = 0.05;   // stop when (p90 - p10) / median is below this
};

Timing sample_until_stable(const std::function<double()>& run_once, const SamplerOptions& options);

}  // namespace trainsim
