// Goodput output: the `goodput` JSON block of predict (inputs, checkpoint, failures, goodput,
// effective days and $, sweeps over interval and cluster size; keys in docs/goodput.md §5) and its
// table, and the short per-plan block search embeds. Numbers only; the model is in sim/goodput.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/goodput.hpp"

namespace trainsim {

nlohmann::ordered_json goodput_json(const GoodputStudy& study);
// The resolved checkpoint and failure inputs (predict's goodput.inputs, search's inputs.goodput).
nlohmann::ordered_json goodput_inputs_json(const GoodputConfig& config);
// One line naming them, for tables.
std::string describe_goodput_inputs(const GoodputConfig& config);
// The headline keys of one estimate (search embeds them per plan).
nlohmann::ordered_json goodput_estimate_json(const GoodputEstimate& estimate);
std::string render_goodput_table(const GoodputStudy& study);

}  // namespace trainsim
