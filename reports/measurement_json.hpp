// `trainsim run` output (INTERFACE.md `trainsim.measurement`): a Measurement written as JSON with
// the envelope, and read back for `compare`. The breakdown carries the same keys as predict's
// (compute_s = forward_s + backward_s); `compute_split` keeps the forward/backward halves so a
// file reads back to the same Measurement. Reading is strict about the keys it needs and their
// types, and ignores keys it does not need (the file is machine-written).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/measurement.hpp"
#include "common/problem_list.hpp"

namespace trainsim {

inline constexpr const char* kMeasurementSchema = "trainsim.measurement";

// `inputs`: the resolved model, plan (the same objects predict writes) and run settings.
nlohmann::ordered_json measurement_json(const Measurement& measurement, nlohmann::ordered_json inputs);

// What `trainsim run` prints when it has written `out_path`: the median iteration and its phases,
// peak memory, page faults (CPU), the loss from first to last step.
std::string measurement_summary(const Measurement& measurement, const std::string& out_path);

// Loads a trainsim.measurement file; throws InputError naming the file and every bad key.
Measurement read_measurement(const std::string& path);
// The same on a parsed document; problems go to `problems` (the caller throws). A wrong schema or
// schema_version throws at once (nothing else in the file would mean what we think).
Measurement read_measurement(const nlohmann::json& doc, const std::string& file, ProblemList& problems);

}  // namespace trainsim
