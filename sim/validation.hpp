// Predicts published runs and measures the error; fits the datasheet cost model's efficiency
// constants on one half of the runs (every second run of each group) so the other half is
// unseen by the fit. docs/validation.md states the split, the defaults and the results.
#pragma once

#include <string>
#include <vector>

#include "sim/cost_model_choice.hpp"
#include "sim/published_runs.hpp"

namespace trainsim {

struct RunResult {
  const PublishedRun* run = nullptr;
  bool in_fit_half = false;
  double predicted_tokens_per_s_per_gpu = 0;
  double predicted_iteration_time_s = 0;
  double predicted_memory_peak_gib = 0;
  bool predicted_fits = true;
  double error = 0;  // predicted / measured - 1
};

struct ErrorSummary {
  std::string name;
  int64_t count = 0;
  double mean_abs_error = 0;
  double max_abs_error = 0;
};

struct ValidationResult {
  std::vector<RunResult> runs;
  std::vector<ErrorSummary> groups;  // per group, all runs
  ErrorSummary fit_half, held_out_half, all;
};

// Every second run of each group (1st, 3rd, ... counting from 0) is in the fit half.
bool in_fit_half(const std::vector<PublishedRun>& runs, size_t index);

ValidationResult validate_runs(const std::vector<PublishedRun>& runs, const CostModelChoice& costs);

// Coordinate search minimising the mean |log(predicted / measured)| over the fit half, over the
// compute constants only (GEMM, attention, memory bandwidth fractions, kernel overhead); the
// communication constants are nccl-tests measurements and stay as given.
// `progress` (may be null) is called after each round with the round and the objective.
EfficiencyConstants fit_constants(const std::vector<PublishedRun>& runs, EfficiencyConstants start,
                                  void (*progress)(int round, double objective) = nullptr);

}  // namespace trainsim
