// Plan search: screen every candidate of the plan space in closed form on all cores, prune what
// does not fit (counted by reason), simulate the best on the event engine (best screened first,
// until no plan left can enter the best the caller shows), and rank them by iteration time or by
// cost (or by either over goodput: effective time / cost, where failures grow with the cluster).
// Also the Pareto front over (time, cost, GPUs).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
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

// How far the screen's objective may lie above the simulated one (a plan the screen thinks slower
// than it is). bench/search_bound.sh measures it over the README's searches: at most 1.4% (Llama
// 3.1 405B with uneven pipelines on B200), so 5% leaves over three times that. (Before the screen
// let interleaved chunks' DP reductions overlap the later chunks' backwards it reached 8%, on
// Llama 3 70B at PP 4 x v5 over 4,096 GPUs, and the early stop then dropped plans 6 and 7 of a
// top 10: the margin is widened to any larger overestimate a search meets.)
constexpr double kScreenMargin = 0.05;

struct SearchOptions {
  PlanSpaceOptions space;             // gpus and global batch inside
  Objective objective = Objective::kTime;
  int64_t simulate_best = 200;        // at most this many screened candidates re-simulated on the event engine
  // Simulation stops early once no screened plan left can enter the best `keep_best` (the plans
  // the caller shows): when the next one's screened objective lies above the keep_best-th best
  // simulated by more than `screen_margin`, or more than the screen overestimated any plan
  // simulated so far. Plans are simulated in rounds of a fixed size, so the thread count does not
  // change where it stops. A negative margin simulates all simulate_best.
  int64_t keep_best = 10;
  double screen_margin = kScreenMargin;
  // When this search is ranked together with earlier ones (several GPU types, precisions or
  // counts): the objective of the keep_best-th best plan they found. Past it a plan can only
  // matter as this search's own best, so simulation stops once the next plan cannot beat both.
  double rank_ceiling = std::numeric_limits<double>::infinity();
  // The best objective earlier searches found for this search's GPU type (another precision or
  // GPU count of it). A plan then matters as the GPU type's best only if it can beat that, so a
  // search whose best screened plan cannot may simulate none (it still must for the table).
  double gpu_type_best = std::numeric_limits<double>::infinity();
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
  // The margin the early stop used (screen_margin, or wider where a simulated plan showed the
  // screen overestimating by more); negative when every simulate_best candidate was simulated.
  double screen_margin = 0;
  // The most the screen's objective lay above a simulated plan's (screened / simulated - 1, 0 when
  // it never did).
  double screen_overestimate = 0;
  // Whether simulation stopped before the last chosen candidate (the rest screened beyond the margin).
  bool stopped_early = false;
  double elapsed_s = 0;
  double screen_plans_per_s = 0;
  std::vector<RankedPlan> plans;           // simulated, best first by the objective
  // Of the candidates that do not fit, the one needing the least device memory (its stage's
  // tensors, CUDA context, workspace and NCCL buffers), so an empty result says how far off it is.
  std::optional<ParallelPlan> closest_miss;
  double closest_miss_bytes = 0;
};

// screen_search, then simulate_screened.
SearchResult search_plans(const ModelSpec& model, const Hardware& hardware, const CostModelChoice& costs,
                          const SearchOptions& options);

// A search in two halves, so that searches ranked together can simulate the most promising
// first (each one's rank_ceiling then rules out more): the screen of every candidate, and the
// simulation of the best screened.
struct ScreenedPlan {
  double score = 0;  // the screen's objective estimate (lower is better)
  size_t index = 0;  // into the candidates screened; once chosen, into ScreenedSearch::plans
};
struct ScreenedSearch {
  std::vector<ParallelPlan> plans;   // the chosen candidates (ScreenedPlan::index points here)
  std::vector<ScreenedPlan> chosen;  // the feasible ones, best screened first, at most simulate_best
  SearchResult result;               // the screen's counts; no plans yet
  double screen_s = 0;
  double best_score() const { return chosen.empty() ? std::numeric_limits<double>::infinity() : chosen.front().score; }
};
ScreenedSearch screen_search(const ModelSpec& model, const Hardware& hardware, const CostModelChoice& costs,
                             const SearchOptions& options);
SearchResult simulate_screened(const ModelSpec& model, const Hardware& hardware, const CostModelChoice& costs,
                               const SearchOptions& options, ScreenedSearch screened);
// SearchOptions::rank_ceiling for a search ranked after `done`: the objective of their
// options.keep_best-th best plan (infinity when they found fewer).
double rank_ceiling_after(const std::vector<const SearchResult*>& done, const SearchOptions& options);
// SearchOptions::gpu_type_best from `done`'s plans on `gpu` (infinity when none).
double gpu_type_best_after(const std::vector<const SearchResult*>& done, const std::string& gpu, const SearchOptions& options);

// Indices of the plans no other plan beats on iteration time, $ per iteration and GPU count.
std::vector<size_t> pareto_front(const std::vector<RankedPlan>& plans);

// Objective value of a simulated plan (seconds or $ per iteration; with train_tokens: days or $;
// the effective objectives divide by the goodput).
double objective_value(const RankedPlan& plan, Objective objective);

}  // namespace trainsim
