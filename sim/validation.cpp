// Validation against published runs: each run predicted, its error, the summaries per group and
// per half; which runs of which files are validated.
#include "sim/validation.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/errors.hpp"
#include "common/nearest_name.hpp"
#include "common/units.hpp"
#include "plan/framework_preset.hpp"
#include "sim/device_memory.hpp"
#include "sim/simulator.hpp"

namespace trainsim {

bool in_fit_half(const std::vector<PublishedRun>& runs, size_t index) {
  size_t position = 0;
  for (size_t i = 0; i < index; ++i) position += runs[i].group == runs[index].group ? 1 : 0;
  return position % 2 == 1;
}

void ErrorSummary::add_error(double error) {
  mean_abs_error = (mean_abs_error * static_cast<double>(count) + std::fabs(error)) / static_cast<double>(count + 1);
  max_abs_error = std::max(max_abs_error, std::fabs(error));
  ++count;
}

void ErrorSummary::add_memory_error(double error) {
  const double n = static_cast<double>(memory_count);
  memory_mean_abs_error = (memory_mean_abs_error * n + std::fabs(error)) / (n + 1);
  memory_max_abs_error = std::max(memory_max_abs_error, std::fabs(error));
  ++memory_count;
}

void ErrorSummary::add(const RunResult& r) {
  if (!r.predicted) {
    ++unsupported;
    return;
  }
  if (r.error) add_error(*r.error);
  if (r.memory_error) add_memory_error(*r.memory_error);
  if (r.run->measured_oom) {
    ++oom_runs;
    oom_flagged += r.predicted_fits ? 0 : 1;
  } else if (!r.predicted_fits) {
    ++ran_not_fitting;
  }
}

RunResult predict_run(const PublishedRun& run, const CostModelChoice& costs) {
  RunResult r;
  r.run = &run;
  if (!run.supported()) return r;
  Hardware hw;
  hw.gpu = find_gpu(run.gpu);
  hw.gpus = run.gpus;
  hw.gpus_per_node = run.gpus_per_node;
  hw.inter_node_gbps_per_gpu = run.inter_node_gbps_per_gpu;
  hw.usd_per_gpu_hour = hw.gpu.usd_per_gpu_hour;
  hw.cluster = "published run";
  const std::unique_ptr<CostModel> cost = costs.make(hw, run.plan.precision, framework_preset(run.framework).flash2_attention_on_hopper);
  const Prediction p = predict_iteration(run.model, run.plan, hw, *cost);
  r.predicted = true;
  r.predicted_tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
  r.predicted_iteration_time_s = p.iteration_time_s;
  r.predicted_memory_peak_gib = bytes_to_gib(p.memory.peak().memory.total_bytes());
  const DeviceMemory& device = p.device.memory;
  r.predicted_memory_reserved_gib = bytes_to_gib(device.reserved_bytes);
  r.predicted_fits = p.fits;
  if (!run.measured_oom && run.measured_tokens_per_s_per_gpu > 0) {
    r.error = p.tokens_per_s_per_gpu / run.measured_tokens_per_s_per_gpu - 1.0;
  }
  if (run.measured_memory_gib && *run.measured_memory_gib > 0) {
    // Reserved or used: the rank the device fills most; allocated: the one with the most tensors.
    const double predicted = counts_allocator_reserve(run.memory_kind) ? bytes_to_gib(device.of_kind(run.memory_kind))
                                                                       : r.predicted_memory_peak_gib;
    r.memory_error = predicted / *run.measured_memory_gib - 1.0;
  }
  return r;
}

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
    g.add(r);
    (r.in_fit_half ? out.fit_half : out.held_out_half).add(r);
    out.all.add(r);
    out.runs.push_back(r);
  }
  for (const auto& name : group_order) out.groups.push_back(groups[name]);
  return out;
}

std::vector<PublishedRun> load_validation_runs(const std::vector<std::string>& paths) {
  std::vector<PublishedRun> all;
  std::map<std::string, size_t> group_file;  // group -> index of the file it came from
  for (size_t f = 0; f < paths.size(); ++f) {
    const std::string& path = paths[f];
    for (PublishedRun& r : load_published_runs(path)) {
      const auto [it, added] = group_file.emplace(r.group, f);
      if (!added && it->second != f) {
        const std::string& first = paths[it->second];
        throw InputError("--runs: group \"" + r.group + "\" is in both " + first + " and " + path,
                         "give each file once; a group's runs belong to one file");
      }
      all.push_back(std::move(r));
    }
  }
  return all;
}

std::vector<PublishedRun> runs_of_groups(std::vector<PublishedRun> runs, const std::vector<std::string>& groups,
                                         const std::vector<std::string>& paths) {
  if (groups.empty()) return runs;
  std::vector<std::string> known;
  for (const PublishedRun& r : runs) {
    if (std::find(known.begin(), known.end(), r.group) == known.end()) known.push_back(r.group);
  }
  for (const std::string& g : groups) {
    if (std::find(known.begin(), known.end(), g) == known.end()) {
      throw InputError("--groups: no group \"" + g + "\" in " + join_names(paths), "groups in the runs files: " + join_names(known));
    }
  }
  std::vector<PublishedRun> kept;
  for (PublishedRun& r : runs) {
    if (std::find(groups.begin(), groups.end(), r.group) != groups.end()) kept.push_back(std::move(r));
  }
  return kept;
}

}  // namespace trainsim
