// `validate` output: the per-run table, the unsupported runs by reason, the per-group summary
// (throughput, memory, out-of-memory rows) and the leave-one-group-out table; and the same as
// JSON (`trainsim.validation`, INTERFACE.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/validation.hpp"
#include "sim/validation_fit.hpp"

namespace trainsim {

struct ValidationReport {
  const ValidationResult* result = nullptr;
  const std::vector<CrossValidatedGroup>* cross_validation = nullptr;  // may be null (not asked)
  bool list_runs = true;                                              // the per-run table
  // What was asked (the JSON's inputs), and the constants the predictions used (printed last).
  std::vector<std::string> runs_files, groups, fit_constants;
  double tolerance = 0;
  EfficiencyConstants constants;
};

// The tables, then the constants.
std::string render_validation(const ValidationReport& report);

// The `trainsim.validation` document: the inputs, then `runs`, `summary` and (when computed)
// `cross_validation`.
nlohmann::ordered_json validation_json(const ValidationReport& report);

nlohmann::ordered_json constants_json(const EfficiencyConstants& c);

}  // namespace trainsim
