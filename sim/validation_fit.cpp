// The group-weighted fit of the efficiency constants on published runs, and leave-one-group-out
// cross-validation.
#include "sim/validation_fit.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <thread>

#include "common/errors.hpp"
#include "sim/device_memory.hpp"

namespace trainsim {

namespace {

// Each run's |log(predicted / measured)| of its throughput and (NaN where it has none or its kind
// leaves the allocator out) of its memory, the runs shared out over the machine's cores (each
// prediction is independent and the simulator keeps no shared state).
struct LogErrors {
  double time = 0, memory = std::nan("");
};
std::vector<LogErrors> abs_log_errors(const FitSet& set, const EfficiencyConstants& constants) {
  CostModelChoice c;
  c.constants = constants;
  std::vector<LogErrors> out(set.runs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < set.runs.size(); i = next++) {
      const RunResult r = predict_run(*set.runs[i], c);
      out[i].time = std::fabs(std::log1p(*r.error));
      if (r.memory_error && counts_allocator_reserve(set.runs[i]->memory_kind)) out[i].memory = std::fabs(std::log1p(*r.memory_error));
    }
  };
  const unsigned threads = std::max(1u, std::min(std::thread::hardware_concurrency(), 8u));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return out;
}

// Mean over groups of the group's mean |log(predicted / measured)| of throughput, plus the same
// over the groups whose memory was measured as reserved or used memory (the allocator's reserve
// moves only it, the compute constants only the first: fitting both at once fits each alone).
double objective(const FitSet& set, const EfficiencyConstants& constants) {
  const std::vector<LogErrors> errors = abs_log_errors(set, constants);
  std::map<std::string, std::pair<double, int64_t>> time, memory;
  for (size_t i = 0; i < set.runs.size(); ++i) {
    auto add = [&](auto& per_group, double e) {
      auto& [sum, n] = per_group[set.runs[i]->group];
      sum += e;
      ++n;
    };
    add(time, errors[i].time);
    if (!std::isnan(errors[i].memory)) add(memory, errors[i].memory);
  }
  auto mean_over_groups = [](const auto& per_group) {
    double total = 0;
    for (const auto& [group, sn] : per_group) total += sn.first / static_cast<double>(sn.second);
    return per_group.empty() ? 0.0 : total / static_cast<double>(per_group.size());
  };
  return mean_over_groups(time) + mean_over_groups(memory);
}

}  // namespace

FitSet fit_set(const std::vector<PublishedRun>& runs, const std::vector<std::string>& groups, bool fit_half_only) {
  FitSet set;
  for (size_t i = 0; i < runs.size(); ++i) {
    const PublishedRun& run = runs[i];
    if (!groups.empty() && std::find(groups.begin(), groups.end(), run.group) == groups.end()) continue;
    if (!run.supported() || run.measured_oom || run.measured_tokens_per_s_per_gpu <= 0) continue;
    if (fit_half_only && !in_fit_half(runs, i)) continue;
    set.runs.push_back(&run);
    if (std::find(set.groups.begin(), set.groups.end(), run.group) == set.groups.end()) set.groups.push_back(run.group);
  }
  return set;
}

namespace {

struct Knob {
  const char* name;
  double EfficiencyConstants::*field;
  double low, high;
  double prior = -1;  // the value before any fit (a measurement); -1: the value the fit starts from
  bool by_default = true;  // fitted when no names are given
};

// The constants a fit may move, with the range it searches. host_dispatch_s reaches 200 us: the
// host time per modeled op of an eager framework is several PyTorch ops and module calls. It is
// fitted only when named: on runs that are not host-bound it would only be one more free knob
// (at 200 us it moves a few large-model runs the compute constants should account for).
const std::vector<Knob>& knobs() {
  static const std::vector<Knob> all = {{"gemm_peak_fraction", &EfficiencyConstants::gemm_peak_fraction, 0.5, 0.95},
                                        {"attention_peak_fraction", &EfficiencyConstants::attention_peak_fraction, 0.2, 0.9},
                                        {"memory_bandwidth_fraction", &EfficiencyConstants::memory_bandwidth_fraction, 0.4, 0.95},
                                        {"kernel_overhead_s", &EfficiencyConstants::kernel_overhead_s, 0.0, 30e-6},
                                        // Prior: eager PyTorch's per-op call, 8.6 us (pytorch #114860).
                                        {"host_dispatch_s", &EfficiencyConstants::host_dispatch_s, 0.0, 200e-6, 8.6e-6, false},
                                        // Prior 0: not modeled (no public measurement). Only runs whose
                                        // measured memory includes the allocator (reserved, used) move it.
                                        // Up to 0.6: the largest gap measured, torchtitan's 405B 1F1B, is
                                        // 19.1 GiB over 39.6 of transient memory (0.48).
                                        {"allocator_reserve_fraction", &EfficiencyConstants::allocator_reserve_fraction, 0.0, 0.6, 0.0, false}};
  return all;
}

bool chosen(const Knob& k, const std::vector<std::string>& names) {
  return names.empty() ? k.by_default : std::find(names.begin(), names.end(), k.name) != names.end();
}

}  // namespace

std::vector<std::string> fittable_constant_names() {
  std::vector<std::string> names;
  for (const Knob& k : knobs()) names.push_back(k.name);
  return names;
}

EfficiencyConstants fit_constants(const FitSet& set, EfficiencyConstants c, const std::function<void(int round, double objective)>& progress,
                                  int rounds, const std::vector<std::string>& names) {
  auto at = [&](const Knob& k, double x) {
    EfficiencyConstants trial = c;
    trial.*k.field = x;
    return objective(set, trial);
  };
  double best = objective(set, c);
  for (int round = 0; round < rounds; ++round) {
    for (const Knob& k : knobs()) {
      if (!chosen(k, names)) continue;
      // A constant no run of the set depends on keeps its value: the data does not ask to move it.
      if (at(k, k.low) == best && at(k, k.high) == best) continue;
      // Golden-section search on one constant with the others fixed, one new point per step
      // (the bracket shrinks to 0.618^14 ~ 0.1% of its width).
      const double phi = 0.6180339887498949;
      double a = k.low, b = k.high, x1 = b - phi * (b - a), x2 = a + phi * (b - a);
      double f1 = at(k, x1), f2 = at(k, x2);
      for (int i = 0; i < 14; ++i) {
        if (f1 < f2) {
          b = x2, x2 = x1, f2 = f1, x1 = b - phi * (b - a), f1 = at(k, x1);
        } else {
          a = x1, x1 = x2, f1 = f2, x2 = a + phi * (b - a), f2 = at(k, x2);
        }
      }
      const double x = 0.5 * (a + b), value = at(k, x);
      if (value < best) {
        best = value;
        c.*k.field = x;
      }
    }
    if (progress) progress(round, best);
  }
  return c;
}

namespace {

ErrorSummary group_errors(const std::vector<PublishedRun>& runs, const std::string& group, const EfficiencyConstants& constants) {
  ErrorSummary s;
  s.name = group;
  CostModelChoice c;
  c.constants = constants;
  for (const PublishedRun& run : runs) {
    if (run.group == group) s.add(predict_run(run, c));
  }
  return s;
}

}  // namespace

std::vector<CrossValidatedGroup> cross_validate(const std::vector<PublishedRun>& runs, const FitSet& set,
                                                const EfficiencyConstants& start, const std::function<void(const std::string& group)>& progress,
                                                const std::vector<std::string>& names) {
  if (progress) progress("");
  const EfficiencyConstants all_groups = fit_constants(set, start, nullptr, 3, names);
  std::vector<CrossValidatedGroup> out;
  for (const std::string& left_out : set.groups) {
    if (progress) progress(left_out);
    FitSet others;
    for (const PublishedRun* run : set.runs) {
      if (run->group != left_out) others.runs.push_back(run);
    }
    for (const std::string& g : set.groups) {
      if (g != left_out) others.groups.push_back(g);
    }
    CrossValidatedGroup cv;
    // Starting from the all-groups fit, two rounds reach the optimum without the group. A
    // constant the other groups do not ask for goes back to its prior first (its measured value,
    // else the starting one), so the left-out group's own data cannot reach its held-out
    // prediction through the warm start or through shipped constants fitted on it.
    EfficiencyConstants warm = all_groups;
    const double with_all = objective(others, warm);
    for (const Knob& k : knobs()) {
      EfficiencyConstants prior = warm;
      prior.*k.field = k.prior >= 0 ? k.prior : start.*k.field;
      if (chosen(k, names) && objective(others, prior) <= with_all) warm = prior;
    }
    cv.constants = fit_constants(others, warm, nullptr, 2, names);
    cv.in_sample = group_errors(runs, left_out, all_groups);
    cv.held_out = group_errors(runs, left_out, cv.constants);
    out.push_back(cv);
  }
  return out;
}

EfficiencyConstants fit_on_fit_half(const std::vector<PublishedRun>& runs, const EfficiencyConstants& start,
                                    const std::vector<std::string>& names, const FitProgress& progress) {
  const FitSet set = fit_set(runs, {}, true);
  if (set.runs.empty()) {
    throw InputError("--fit: no run of the chosen groups can be fitted on (none predicted with a measured throughput in their fit half)",
                     "choose groups with predicted runs (validate --summary lists them), or leave --groups out");
  }
  if (progress.fitting) progress.fitting(set);
  return fit_constants(set, start, progress.round, 3, names);
}

std::vector<CrossValidatedGroup> leave_one_group_out(const std::vector<PublishedRun>& runs, const EfficiencyConstants& start,
                                                     const std::vector<std::string>& names, const FitProgress& progress) {
  const FitSet set = fit_set(runs, {}, false);
  if (set.groups.size() < 2) {
    throw InputError("--cross-validate: " + std::to_string(set.groups.size()) +
                         " group(s) with predicted runs; leaving one out needs at least 2 (one to fit on, one to predict)",
                     "give --groups at least two groups with predicted runs, or leave --groups out");
  }
  if (progress.fitting) progress.fitting(set);
  return cross_validate(runs, set, start, progress.leaving_out, names);
}

}  // namespace trainsim
