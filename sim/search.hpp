// Plan search: screen every candidate of the plan space in closed form on all cores, prune what
// does not fit (counted by reason), simulate the best few hundred on the event engine, and rank
// them by iteration time or by cost (or by either over goodput: effective time / cost, where
// failures grow with the cluster). Also the Pareto front over (time, cost, GPUs).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "sim/cost_model_choice.hpp"
#include "sim/goodput.hpp"
#include "sim/plan_space.hpp"
#include "sim/simulator.hpp"

namespace trainsim {

enum class Objective { kTime, kCost, kEffectiveTime, kEffectiveCost };
const char* to_string(Objective objective);  // time, cost, effective-time, effective-cost

struct SearchOptions {
  PlanSpaceOptions space;             // gpus and global batch inside
  Objective objective = Objective::kTime;
  int64_t simulate_best = 200;        // screened candidates re-simulated on the event engine
  int threads = 0;                    // 0: all hardware threads
  bool flash2_attention = false;      // the framework's attention kernel (FrameworkPreset)
  // Training-run what-ifs (0 = not set): tokens to train, deadline and budget for them.
  double train_tokens = 0, deadline_days = 0, budget_usd = 0;
  // Checkpointing and failures: each plan's goodput; deadline and budget then apply to the
  // effective days and $. Needed by the effective objectives.
  std::optional<GoodputConfig> goodput;
  // Called from the calling thread about every 100 ms with the fraction screened.
  std::function<void(double fraction)> progress;
};

struct RankedPlan {
  Prediction prediction;
  double screen_time_s = 0;    // what the screen estimated
  double usd_per_million_tokens = 0;
  double train_days = 0, train_usd = 0;  // with train_tokens
  std::optional<GoodputEstimate> goodput;  // with SearchOptions::goodput
};

struct SearchResult {
  int64_t evaluated = 0;                   // candidates screened
  int64_t feasible = 0;                    // fit in memory and meet deadline / budget
  std::map<std::string, int64_t> pruned;   // reason -> count
  // Candidates the framework(s) of PlanSpaceOptions::frameworks cannot run: reason -> count.
  std::map<std::string, int64_t> left_out;
  int64_t simulated = 0;
  double elapsed_s = 0;
  double screen_plans_per_s = 0;
  std::vector<RankedPlan> plans;           // simulated, best first by the objective
  // Of the candidates that do not fit, the one needing the least device memory (its stage's
  // tensors, CUDA context, workspace and NCCL buffers), so an empty result says how far off it is.
  std::optional<ParallelPlan> closest_miss;
  double closest_miss_bytes = 0;
};

SearchResult search_plans(const ModelSpec& model, const Hardware& hardware, const CostModelChoice& costs,
                          const SearchOptions& options);

// Indices of the plans no other plan beats on iteration time, $ per iteration and GPU count.
std::vector<size_t> pareto_front(const std::vector<RankedPlan>& plans);

// Objective value of a simulated plan (seconds or $ per iteration; with train_tokens: days or $;
// the effective objectives divide by the goodput).
double objective_value(const RankedPlan& plan, Objective objective);

}  // namespace trainsim
