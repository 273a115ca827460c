// `validate` output: the per-run table, the unsupported runs by reason, the per-group summary
// (throughput, memory, out-of-memory rows) and the leave-one-group-out table; and the same as
// JSON (`trainsim.validation`, INTERFACE.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/validation.hpp"

namespace trainsim {

struct ValidationReport {
  const ValidationResult* result = nullptr;
  const std::vector<CrossValidatedGroup>* cross_validation = nullptr;  // may be null (not asked)
  bool list_runs = true;                                              // the per-run table
};

std::string render_validation(const ValidationReport& report);

// The `runs`, `summary` and (when computed) `cross_validation` members of the JSON document.
void add_validation_json(const ValidationReport& report, nlohmann::ordered_json& doc);

nlohmann::ordered_json constants_json(const EfficiencyConstants& c);

}  // namespace trainsim
