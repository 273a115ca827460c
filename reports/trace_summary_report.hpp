// The `trainsim trace` output: per trace file its steps, kernel categories, the kernels no category
// placed (by name) and GPU annotations, as a text table or as JSON (schema trainsim.trace_summary).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interop/kineto_summary.hpp"
#include "interop/trace_measurement.hpp"

namespace trainsim {

// `passes`: the same file read as a measurement (interop/trace_measurement.hpp): its median step
// by phase and the kernel time of trainsim's op categories by pass.
std::string render_trace_summary(const TraceSummary& s, const TraceMeasurement& passes, int top_other);
nlohmann::ordered_json trace_summary_json(const std::vector<TraceSummary>& traces, const std::vector<TraceMeasurement>& passes,
                                          int top_other);

}  // namespace trainsim
