// Medians over the timed iterations; see measurement.hpp.
#include "common/measurement.hpp"

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
  std::vector<double> times, fwd, bwd, tp, dp, pp, bubble, opt, faults, system;
  for (size_t i = static_cast<size_t>(m.warmup_iterations); i < m.iterations.size(); ++i) {
    const IterationRecord& r = m.iterations[i];
    times.push_back(r.time_s);
    fwd.push_back(r.phases.forward_s);
    bwd.push_back(r.phases.backward_s);
    tp.push_back(r.phases.tp_comm_exposed_s);
    dp.push_back(r.phases.dp_comm_exposed_s);
    pp.push_back(r.phases.pp_comm_exposed_s);
    bubble.push_back(r.phases.bubble_s);
    opt.push_back(r.phases.optimizer_s);
    faults.push_back(static_cast<double>(r.page_faults));
    system.push_back(r.system_s);
  }
  m.iteration_time_s = median(times);
  m.breakdown = PhaseBreakdown{};
  m.breakdown.forward_s = median(fwd);
  m.breakdown.backward_s = median(bwd);
  m.breakdown.compute_s = m.breakdown.forward_s + m.breakdown.backward_s;
  m.breakdown.tp_comm_exposed_s = median(tp);
  m.breakdown.dp_comm_exposed_s = median(dp);
  m.breakdown.pp_comm_exposed_s = median(pp);
  m.breakdown.bubble_s = median(bubble);
  m.breakdown.optimizer_s = median(opt);
  m.page_faults_per_iteration = median(faults);
  m.system_s_per_iteration = median(system);
}

OpCategoryTimes median_op_categories(const std::vector<IterationRecord>& records, int64_t warmup_iterations) {
  OpCategoryTimes out;
  for (size_t c = 0; c < kOpCategoryCount; ++c) {
    std::vector<double> forward, backward;
    for (size_t i = static_cast<size_t>(warmup_iterations); i < records.size(); ++i) {
      forward.push_back(records[i].ops.forward_s[c]);
      backward.push_back(records[i].ops.backward_s[c]);
    }
    out.forward_s[c] = median(forward);
    out.backward_s[c] = median(backward);
  }
  return out;
}

}  // namespace trainsim
