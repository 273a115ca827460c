// `trainsim compare`: predicted vs measured per phase (iteration time, compute, exposed TP / DP /
// PP communication, bubble, optimizer, memory peak) with the relative error predicted/measured − 1,
// and the model / plan keys on which the two files disagree. Pure functions on figures already
// read from the files (compared_run.hpp reads them), plus the table and `trainsim.comparison` JSON.
// Exit codes are the CLI's business: this file only says whether the tolerance is exceeded.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/op_category.hpp"
#include "reports/compared_run.hpp"

namespace trainsim {

inline constexpr double kDefaultCompareTolerance = 0.15;

struct FigureComparison {
  std::string label;  // "iteration time"
  std::string key;    // "iteration_time_s": the key in both files, with its unit
  double predicted = 0;
  double measured = 0;
  std::optional<double> error;  // predicted / measured − 1; none when measured is 0
};

// One key of inputs.model / inputs.plan on which the files disagree (nullopt: absent there).
struct InputDifference {
  std::string key;  // "/inputs/plan/tp"
  std::optional<std::string> predicted;
  std::optional<std::string> measured;
};

// One op category of one pipeline stage, seconds per iteration on both sides.
struct OpCategoryComparison {
  OpCategory category = OpCategory::kOther;
  double predicted_forward_s = 0, measured_forward_s = 0;
  double predicted_backward_s = 0, measured_backward_s = 0;
  std::optional<double> error;  // of forward + backward
};

struct OpStageComparison {
  int64_t stage = 0;
  std::vector<OpCategoryComparison> rows;  // categories that either side has, in the vocabulary's order
  // Every GEMM role summed (gemm_* and gemm_other), when the measurement has GEMMs it could not
  // place by role (a profiler trace): then only this row compares GEMM time like for like.
  std::optional<OpCategoryComparison> gemm_all_roles;
};

struct Comparison {
  std::vector<FigureComparison> figures;  // iteration time first, then memory peak, then checkpoint save / load
  std::vector<OpStageComparison> op_stages;  // stages both files have op categories for
  std::vector<InputDifference> differences;
  double tolerance = kDefaultCompareTolerance;

  const FigureComparison& iteration_time() const { return figures.front(); }
  // |iteration time error| > tolerance (also when the error cannot be computed).
  bool over_tolerance() const;
};

// predicted / measured − 1; nullopt when measured is 0.
std::optional<double> relative_error(double predicted, double measured);
// Keys present in only one map or with different values, in key order.
std::vector<InputDifference> diff_identities(const RunIdentity& predicted, const RunIdentity& measured);
Comparison compare_runs(const ComparedRun& predicted, const ComparedRun& measured, double tolerance);
// Throws InputError listing every differing key unless the two runs describe the same model and plan.
void require_same_inputs(const Comparison& comparison, const ComparedRun& predicted, const ComparedRun& measured);

std::string render_comparison_table(const Comparison& comparison, const ComparedRun& predicted,
                                    const ComparedRun& measured);
nlohmann::ordered_json comparison_json(const Comparison& comparison, const ComparedRun& predicted,
                                       const ComparedRun& measured, bool allow_mismatch);

}  // namespace trainsim
