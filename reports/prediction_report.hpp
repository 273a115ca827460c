// `trainsim predict` output: the INTERFACE.md `trainsim.prediction` JSON and a readable table
// (headline figures, breakdown with shares, memory per GPU, cost).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reports/batch_echo.hpp"
#include "sim/simulator.hpp"

namespace trainsim {

// `batch`: how the command line chose the global batch and sequence length (null: as the plan states
// them); it adds the "batch" object.
nlohmann::ordered_json prediction_json(const Prediction& prediction, const BatchEcho* batch = nullptr);
// The result keys without the envelope (search and validate embed them per plan).
nlohmann::ordered_json prediction_result_json(const Prediction& prediction);
std::string render_prediction_table(const Prediction& prediction, const BatchEcho* batch = nullptr);

}  // namespace trainsim
