// Predicts published runs and measures the error. Runs the simulator cannot simulate are listed
// as unsupported with their reason; runs that went out of memory are scored on whether the
// prediction says they do not fit; memory is scored where a figure was measured, per kind. Each
// group has a fit half (every second run) that fits may use (sim/validation_fit.hpp) and a
// held-out half they never see. docs/validation.md has the results.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/cost_model_choice.hpp"
#include "sim/published_runs.hpp"

namespace trainsim {

struct RunResult {
  const PublishedRun* run = nullptr;
  bool in_fit_half = false;
  bool predicted = false;  // false: unsupported (run->unsupported says why)
  double predicted_tokens_per_s_per_gpu = 0;
  double predicted_iteration_time_s = 0;
  double predicted_memory_peak_gib = 0;      // the allocated peak (tensors), largest over ranks
  double predicted_memory_reserved_gib = 0;  // what the device reports (sim/device_memory.hpp)
  bool predicted_fits = true;
  std::optional<double> error;         // throughput: predicted / measured - 1 (none for OOM rows)
  std::optional<double> memory_error;  // predicted memory of the measured kind / measured - 1
};

struct ErrorSummary {
  std::string name;
  int64_t count = 0;  // runs with a throughput error
  double mean_abs_error = 0;
  double max_abs_error = 0;
  int64_t unsupported = 0;
  int64_t memory_count = 0;
  double memory_mean_abs_error = 0;
  double memory_max_abs_error = 0;
  int64_t oom_runs = 0, oom_flagged = 0;  // runs that went out of memory; of them, predicted not to fit
  int64_t ran_not_fitting = 0;            // runs that trained but are predicted not to fit

  void add_error(double error);
  void add_memory_error(double error);
  void add(const RunResult& run);  // its errors, or one more unsupported run
};

struct ValidationResult {
  std::vector<RunResult> runs;
  std::vector<ErrorSummary> groups;  // per group, all runs, in file order
  ErrorSummary fit_half, held_out_half, all;
};

// Every second run of each group (1st, 3rd, ... counting from 0) is in the fit half.
bool in_fit_half(const std::vector<PublishedRun>& runs, size_t index);

// One run predicted with `costs` (its framework's attention kernel); not predicted when unsupported.
RunResult predict_run(const PublishedRun& run, const CostModelChoice& costs);

ValidationResult validate_runs(const std::vector<PublishedRun>& runs, const CostModelChoice& costs);

// The runs of every file, in order; a group may come from one file only (the fit halves and the
// group weights are per group). InputError naming both files otherwise.
std::vector<PublishedRun> load_validation_runs(const std::vector<std::string>& paths);

// The runs of `groups` (all when empty); an unknown group is an InputError that lists the known
// ones. `paths` name the files in it.
std::vector<PublishedRun> runs_of_groups(std::vector<PublishedRun> runs, const std::vector<std::string>& groups,
                                         const std::vector<std::string>& paths);

}  // namespace trainsim
