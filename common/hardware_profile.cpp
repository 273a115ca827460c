// Sample statistics for profiles.
#include "common/hardware_profile.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"

namespace trainsim {

Timing summarize_samples(std::vector<double> samples) {
  TRAINSIM_ASSERT(!samples.empty(), "a timing needs at least one sample");
  std::sort(samples.begin(), samples.end());
  auto percentile = [&](double q) {
    const double pos = q * static_cast<double>(samples.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(samples.size() - 1, lo + 1);
    return samples[lo] + (samples[hi] - samples[lo]) * (pos - static_cast<double>(lo));
  };
  Timing t;
  t.median_s = percentile(0.5);
  t.p10_s = percentile(0.1);
  t.p90_s = percentile(0.9);
  t.samples = static_cast<int64_t>(samples.size());
  return t;
}

}  // namespace trainsim
