// The `trainsim trace` output: per trace file its steps, kernel categories, the kernels no category
// placed (by name) and GPU annotations, as a text table or as JSON (schema trainsim.trace_summary).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interop/kineto_summary.hpp"

namespace trainsim {

std::string render_trace_summary(const TraceSummary& s, int top_other);
nlohmann::ordered_json trace_summary_json(const std::vector<TraceSummary>& traces, int top_other);

}  // namespace trainsim
