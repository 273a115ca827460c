// The answer a search gives to the question asked, for the top of its table, its JSON and the
// report: the best plan by the objective with its days, $ and goodput for the tokens to train and
// whether it meets the deadline and budget; the best plan of each GPU type searched (the "H100 at
// $2.50 or H200 at $3.80?" question, each at its own price); and the cost model used with its
// validated error band.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/search_report.hpp"

namespace trainsim {

// The best ranked plan of each GPU type searched (over its GPU counts and precisions), best
// first by the objective.
std::vector<RankedPlan> best_per_gpu_type(const SearchReport& report);

// "Answer (objective cost): ..." lines; "" when no plan is left.
std::string render_search_answer(const SearchReport& report);

// The same as JSON (key "answer" of trainsim.search); null when no plan is left.
nlohmann::ordered_json search_answer_json(const SearchReport& report);

// The cost model's error band for the reader: the datasheet model's validated error, or what a
// measured profile's error rests on.
std::string cost_model_error_band(const std::string& cost_model);

}  // namespace trainsim
