// `trainsim search` output: the ranked plans over every GPU type and count searched, counts of
// evaluated / feasible / pruned-by-reason candidates, the Pareto front over (time, $, GPUs), and
// the imported plan (--from) beside the best, as a table or `trainsim.search` JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/search.hpp"
#include "sim/search_request.hpp"

namespace trainsim {

struct SearchReport {
  struct Run {
    Hardware hardware;
    Precision precision = Precision::kBf16;
    SearchResult result;
  };
  ModelSpec model;
  Objective objective = Objective::kTime;
  double train_tokens = 0;
  std::optional<GoodputConfig> goodput;  // checkpoints and failures, when the plans carry goodput
  double deadline_days = 0, budget_usd = 0;  // the limits the ranked plans meet (0: none)
  std::vector<Run> runs;             // one per precision, GPU type and count
  std::vector<std::string> skipped;  // precision and GPU pairs not searched, with the reason
  std::vector<std::string> restrictions;  // what limits the plans to a framework's (framework_restrictions)
  int64_t global_batch = 0;                 // sequences per iteration, for the header (0: not shown)
  std::vector<RankedPlan> best;      // merged and ranked, the top K
  std::vector<RankedPlan> pareto;    // over every simulated plan
  std::string imported_file;                  // the --from file
  std::optional<ImportedPlanResult> imported;  // its plan, simulated at the searched size

  void add(const Hardware& hardware, Precision precision, SearchResult result);
  void finish(size_t top);
  std::string render() const;
  nlohmann::ordered_json to_json() const;
};

// A plan in a table cell: "dp64 tp1 pp1 cp2 mb1 z1 none sp".
std::string plan_cells_text(const ParallelPlan& plan);

}  // namespace trainsim
