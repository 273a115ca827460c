// Medians over the timed iterations; see measurement.hpp.
#include "runtime/measurement.hpp"

#include <algorithm>

namespace trainsim {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

void summarize_iterations(Measurement& m) {
  std::vector<double> times, fwd, bwd, tp, dp, pp, bubble, opt;
  for (size_t i = static_cast<size_t>(m.warmup_iterations); i < m.iterations.size(); ++i) {
    const IterationRecord& r = m.iterations[i];
    times.push_back(r.time_s);
    fwd.push_back(r.phases.forward_s);
    bwd.push_back(r.phases.backward_s);
    tp.push_back(r.phases.tp_comm_s);
    dp.push_back(r.phases.dp_comm_s);
    pp.push_back(r.phases.pp_comm_s);
    bubble.push_back(r.phases.bubble_s);
    opt.push_back(r.phases.optimizer_s);
  }
  m.iteration_time_s = median(times);
  m.breakdown = {median(fwd), median(bwd), median(tp), median(dp), median(pp), median(bubble), median(opt)};
}

}  // namespace trainsim
