// Predicts published runs and measures the error. Runs the simulator cannot simulate are listed
// as unsupported with their reason; runs that went out of memory are scored on whether the
// prediction says they do not fit; memory is scored where a figure was measured, per kind.
// Fitting weights groups equally (1,440 rows of one source must not outvote 8 of another), on the
// fit half (every second run of each chosen group) so the other half stays unseen; leave-one-
// group-out cross-validation refits without each group in turn. docs/validation.md has the results.
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

  void add_error(double error);
  void add_memory_error(double error);
};

struct ValidationResult {
  std::vector<RunResult> runs;
  std::vector<ErrorSummary> groups;  // per group, all runs, in file order
  ErrorSummary fit_half, held_out_half, all;
};

// Every second run of each group (1st, 3rd, ... counting from 0) is in the fit half.
bool in_fit_half(const std::vector<PublishedRun>& runs, size_t index);

ValidationResult validate_runs(const std::vector<PublishedRun>& runs, const CostModelChoice& costs);

// Runs of `groups` (all groups when empty) that the fit may use: supported, with a throughput.
struct FitSet {
  std::vector<const PublishedRun*> runs;
  std::vector<std::string> groups;  // in file order
};
FitSet fit_set(const std::vector<PublishedRun>& runs, const std::vector<std::string>& groups, bool fit_half_only);

// Coordinate search minimising the mean over groups of each group's mean |log(predicted /
// measured)| (throughput; plus the same of memory over groups measured with the allocator's
// reserve in) over the constants named in `names`: the compute constants (GEMM, attention, memory
// bandwidth fractions, kernel overhead) when empty; the host time per op (host_dispatch_s, for
// host-bound runs) and the allocator's reserve (allocator_reserve_fraction) only when named. The communication constants are nccl-tests measurements and stay as given. A constant no
// run of the set depends on keeps its starting value. `progress` (may be null) is called after
// each round with the round and the objective.
EfficiencyConstants fit_constants(const FitSet& set, EfficiencyConstants start,
                                  void (*progress)(int round, double objective) = nullptr, int rounds = 3,
                                  const std::vector<std::string>& names = {});

// The names `fit_constants` accepts, in the order it fits them.
std::vector<std::string> fittable_constant_names();

// Leave-one-group-out: for each group of `set`, the constants fitted on the other groups and
// that group's errors with them (every run of the group, both halves), beside its in-sample
// errors with the constants fitted on every group of `set`.
struct CrossValidatedGroup {
  ErrorSummary in_sample;  // the group, predicted with constants fitted on all groups
  ErrorSummary held_out;   // the group, predicted with constants fitted without it
  EfficiencyConstants constants;  // fitted without it
};
std::vector<CrossValidatedGroup> cross_validate(const std::vector<PublishedRun>& runs, const FitSet& set,
                                                const EfficiencyConstants& start,
                                                void (*progress)(const std::string& group) = nullptr,
                                                const std::vector<std::string>& names = {});

}  // namespace trainsim
