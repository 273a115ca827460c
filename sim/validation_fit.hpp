// Fitting the efficiency constants on published runs: groups weighted equally (1,440 rows of one
// source must not outvote 8 of another), on the fit half (every second run of each chosen group)
// so the other half stays unseen; leave-one-group-out cross-validation refits without each group
// in turn. `validate --fit` and `--cross-validate` are fit_on_fit_half and leave_one_group_out.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/validation.hpp"

namespace trainsim {

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
                                  const std::function<void(int round, double objective)>& progress = nullptr, int rounds = 3,
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
                                                const std::function<void(const std::string& group)>& progress = nullptr,
                                                const std::vector<std::string>& names = {});

// What a fit says as it goes (each may be empty): the set it fits on, each round's objective,
// each group it leaves out ("" for the fit on every group first).
struct FitProgress {
  std::function<void(const FitSet& set)> fitting;
  std::function<void(int round, double objective)> round;
  std::function<void(const std::string& group)> leaving_out;
};

// The constants named in `names` (the compute constants when empty) fitted on the fit half of
// `runs`, groups weighted equally, from `start`. InputError when no run can be fitted on.
EfficiencyConstants fit_on_fit_half(const std::vector<PublishedRun>& runs, const EfficiencyConstants& start,
                                    const std::vector<std::string>& names, const FitProgress& progress = {});

// Each group of `runs` with predicted runs, predicted with the constants fitted without it (from
// `start`). InputError with fewer than two such groups.
std::vector<CrossValidatedGroup> leave_one_group_out(const std::vector<PublishedRun>& runs, const EfficiencyConstants& start,
                                                     const std::vector<std::string>& names, const FitProgress& progress = {});

}  // namespace trainsim
