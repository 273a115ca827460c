// Adaptive sampling loop.
#include "calibrate/sampler.hpp"

#include <vector>

namespace trainsim {

Timing sample_until_stable(const std::function<double()>& run_once, const SamplerOptions& o) {
  for (int i = 0; i < o.warmup; ++i) run_once();
  std::vector<double> samples;
  double total = 0;
  for (;;) {
    const double t = run_once();
    samples.push_back(t);
    total += t;
    const int n = static_cast<int>(samples.size());
    if (n >= o.max_samples || (n >= o.min_samples && total >= o.max_total_s)) break;
    if (n >= o.min_samples && n % 5 == 0) {
      const Timing s = summarize_samples(samples);
      if (s.median_s > 0 && (s.p90_s - s.p10_s) / s.median_s <= o.target_rel_spread) break;
    }
  }
  return summarize_samples(samples);
}

}  // namespace trainsim
