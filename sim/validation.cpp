// Validation against published runs and the fit of the efficiency constants.
#include "sim/validation.hpp"

#include <cmath>
#include <map>

#include "common/units.hpp"
#include "sim/simulator.hpp"

namespace trainsim {

bool in_fit_half(const std::vector<PublishedRun>& runs, size_t index) {
  size_t position = 0;
  for (size_t i = 0; i < index; ++i) position += runs[i].group == runs[index].group ? 1 : 0;
  return position % 2 == 1;
}

namespace {

RunResult predict_run(const PublishedRun& run, const CostModelChoice& costs) {
  Hardware hw;
  hw.gpu = find_gpu(run.gpu);
  hw.gpus = run.gpus;
  hw.gpus_per_node = run.gpus_per_node;
  hw.inter_node_gbps_per_gpu = run.inter_node_gbps_per_gpu;
  hw.usd_per_gpu_hour = hw.gpu.usd_per_gpu_hour;
  hw.cluster = "published run";
  const std::unique_ptr<CostModel> cost = costs.make(hw, run.plan.precision);
  const Prediction p = predict_iteration(run.model, run.plan, hw, *cost);
  RunResult r;
  r.run = &run;
  r.predicted_tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
  r.predicted_iteration_time_s = p.iteration_time_s;
  r.predicted_memory_peak_gib = bytes_to_gib(p.memory.peak().memory.total_bytes());
  r.predicted_fits = p.fits;
  r.error = p.tokens_per_s_per_gpu / run.measured_tokens_per_s_per_gpu - 1.0;
  return r;
}

void add_to(ErrorSummary& s, double error) {
  s.mean_abs_error = (s.mean_abs_error * static_cast<double>(s.count) + std::fabs(error)) / static_cast<double>(s.count + 1);
  s.max_abs_error = std::max(s.max_abs_error, std::fabs(error));
  ++s.count;
}

double objective(const std::vector<PublishedRun>& runs, const EfficiencyConstants& constants) {
  CostModelChoice c;
  c.constants = constants;
  double sum = 0;
  int64_t n = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!in_fit_half(runs, i)) continue;
    sum += std::fabs(std::log1p(predict_run(runs[i], c).error));
    ++n;
  }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

}  // namespace

ValidationResult validate_runs(const std::vector<PublishedRun>& runs, const CostModelChoice& constants) {
  ValidationResult out;
  out.fit_half.name = "fit half";
  out.held_out_half.name = "held-out half";
  out.all.name = "all runs";
  std::vector<std::string> group_order;
  std::map<std::string, ErrorSummary> groups;
  for (size_t i = 0; i < runs.size(); ++i) {
    RunResult r = predict_run(runs[i], constants);
    r.in_fit_half = in_fit_half(runs, i);
    if (!groups.count(runs[i].group)) group_order.push_back(runs[i].group);
    ErrorSummary& g = groups[runs[i].group];
    g.name = runs[i].group;
    add_to(g, r.error);
    add_to(r.in_fit_half ? out.fit_half : out.held_out_half, r.error);
    add_to(out.all, r.error);
    out.runs.push_back(r);
  }
  for (const auto& name : group_order) out.groups.push_back(groups[name]);
  return out;
}

EfficiencyConstants fit_constants(const std::vector<PublishedRun>& runs, EfficiencyConstants c,
                                  void (*progress)(int round, double objective)) {
  struct Knob {
    double EfficiencyConstants::*field;
    double low, high;
  };
  const Knob knobs[] = {{&EfficiencyConstants::gemm_peak_fraction, 0.5, 0.95},
                        {&EfficiencyConstants::attention_peak_fraction, 0.2, 0.9},
                        {&EfficiencyConstants::memory_bandwidth_fraction, 0.4, 0.95},
                        {&EfficiencyConstants::kernel_overhead_s, 0.0, 30e-6}};
  double best = objective(runs, c);
  for (int round = 0; round < 4; ++round) {
    for (const Knob& k : knobs) {
      // Golden-section search on one constant with the others fixed.
      double a = k.low, b = k.high;
      const double phi = 0.6180339887498949;
      for (int i = 0; i < 14; ++i) {
        const double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
        EfficiencyConstants c1 = c, c2 = c;
        c1.*k.field = x1;
        c2.*k.field = x2;
        if (objective(runs, c1) < objective(runs, c2)) b = x2;
        else a = x1;
      }
      EfficiencyConstants candidate = c;
      candidate.*k.field = 0.5 * (a + b);
      const double value = objective(runs, candidate);
      if (value < best) {
        best = value;
        c = candidate;
      }
    }
    if (progress != nullptr) progress(round, best);
  }
  return c;
}

}  // namespace trainsim
