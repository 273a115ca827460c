// Two-tier search: multi-threaded closed-form screen, then event simulation of the best.
#include "sim/search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "common/errors.hpp"
#include "sim/screen.hpp"

namespace trainsim {

namespace {

using Screened = ScreenedPlan;

struct ThreadResult {
  std::vector<Screened> feasible;
  std::map<std::string, int64_t> pruned;
  std::map<std::string, int64_t> left_out;  // the framework cannot run them
  Screened closest_miss{std::numeric_limits<double>::infinity(), 0};  // score: the device bytes it needs
};

// Keeps the smaller need; equal needs go to the earlier candidate, so no thread count changes it.
void keep_closest(Screened& closest, const Screened& candidate) {
  if (candidate.score < closest.score || (candidate.score == closest.score && candidate.index < closest.index)) closest = candidate;
}

double training_iterations(const ModelSpec& model, const ParallelPlan& plan, double tokens) {
  return tokens / (static_cast<double>(plan.global_batch) * static_cast<double>(model.seq_len));
}

void fill_costs(RankedPlan& r, const ModelSpec& model, const SearchOptions& o) {
  const Prediction& p = r.prediction;
  r.usd_per_million_tokens = p.usd_per_iteration / (p.tokens_per_s * p.iteration_time_s) * 1e6;
  if (o.train_tokens > 0) {
    const double iterations = training_iterations(model, p.plan, o.train_tokens);
    r.train_days = iterations * p.iteration_time_s / 86400.0;
    r.train_usd = iterations * p.usd_per_iteration;
  }
  if (o.goodput) {
    GoodputConfig config = *o.goodput;
    config.train_tokens = o.train_tokens;
    r.goodput = goodput_of_plan(model, p.plan, p.hardware, p.iteration_time_s, config);
  }
}

}  // namespace

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::kTime: return "time";
    case Objective::kCost: return "cost";
    case Objective::kEffectiveTime: return "effective-time";
    case Objective::kEffectiveCost: return "effective-cost";
  }
  return "time";
}

double objective_value(const RankedPlan& r, Objective objective) {
  const bool time = objective == Objective::kTime || objective == Objective::kEffectiveTime;
  const bool effective = (objective == Objective::kEffectiveTime || objective == Objective::kEffectiveCost) && r.goodput;
  const double goodput = effective ? r.goodput->goodput : 1.0;
  if (r.train_days > 0) return (time ? r.train_days : r.train_usd) / goodput;
  return (time ? r.prediction.iteration_time_s : r.prediction.usd_per_iteration) / goodput;
}

namespace {

// The screen's verdict on one candidate: its objective estimate, or the reason it was pruned.
struct Verdict {
  double score = 0;
  const char* pruned = nullptr;
  double device_bytes = 0;  // what it needs on the device, when it does not fit
  const char* left_out = nullptr;  // why the framework cannot run it
};

Verdict screen_one(const ModelSpec& model, const ParallelPlan& p, const Hardware& hw, const CostModel& cost,
                   const SearchOptions& o) {
  if (!o.space.frameworks.empty()) {
    if (const char* why = not_runnable(o.space.frameworks, p)) return {0, nullptr, 0, why};
  }
  ScreenEstimate e = screen_fit(model, p, hw);
  if (!e.fits) return {0, "do not fit in memory", e.device_used_bytes};
  try {
    e = screen_plan(model, p, hw, cost);
  } catch (const InputError&) {
    return {0, "outside the profile's measurements"};
  }
  // Goodput stretches wall time and $ alike (effective = ideal / goodput).
  const double goodput = o.goodput ? goodput_of_plan(model, p, hw, e.iteration_time_s, *o.goodput).goodput : 1.0;
  const bool time = o.objective == Objective::kTime || o.objective == Objective::kEffectiveTime;
  const double rank_by = o.objective == Objective::kTime || o.objective == Objective::kCost ? 1.0 : goodput;
  const double usd_per_iteration = e.iteration_time_s / 3600.0 * static_cast<double>(hw.gpus) * hw.usd_per_gpu_hour;
  if (o.train_tokens <= 0) return {(time ? e.iteration_time_s : usd_per_iteration) / rank_by, nullptr};
  const double iterations = training_iterations(model, p, o.train_tokens);
  const double days = iterations * e.iteration_time_s / 86400.0 / goodput, usd = iterations * usd_per_iteration / goodput;
  if (o.deadline_days > 0 && days > o.deadline_days) return {0, "miss the deadline"};
  if (o.budget_usd > 0 && usd > o.budget_usd) return {0, "over the budget"};
  return {(time ? days : usd) * goodput / rank_by, nullptr};
}

int thread_count(const SearchOptions& o) {
  return o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Screens every candidate on all threads (chunks handed out by an atomic counter); the calling
// thread also reports progress when asked to.
std::vector<ThreadResult> screen_all(const ModelSpec& model, const std::vector<ParallelPlan>& plans, const Hardware& hw,
                                     const CostModelChoice& costs, const SearchOptions& o) {
  const int threads = thread_count(o);
  std::atomic<size_t> next{0}, done{0};
  std::vector<ThreadResult> results(static_cast<size_t>(threads));
  auto worker = [&](ThreadResult& out) {
    constexpr size_t kChunk = 256;
    const std::unique_ptr<CostModel> cost = costs.make(hw, o.space.precision, o.flash2_attention);
    for (size_t begin = next.fetch_add(kChunk); begin < plans.size(); begin = next.fetch_add(kChunk)) {
      const size_t end = std::min(plans.size(), begin + kChunk);
      for (size_t i = begin; i < end; ++i) {
        const Verdict v = screen_one(model, plans[i], hw, *cost, o);
        if (v.left_out != nullptr) ++out.left_out[v.left_out];
        else if (v.pruned != nullptr) ++out.pruned[v.pruned];
        else out.feasible.push_back({v.score, i});
        if (v.device_bytes > 0) keep_closest(out.closest_miss, {v.device_bytes, i});
      }
      done.fetch_add(end - begin);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, std::ref(results[static_cast<size_t>(t)]));
  if (o.progress) {
    std::thread own(worker, std::ref(results[0]));
    while (done.load() < plans.size()) {
      o.progress(static_cast<double>(done.load()) / static_cast<double>(plans.size()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    o.progress(1.0);
    own.join();
  } else {
    worker(results[0]);
  }
  for (auto& t : pool) t.join();
  return results;
}

// The keep-th smallest of `values` (infinity when there are fewer).
double kth_smallest(std::vector<double> values, size_t keep) {
  if (keep == 0 || values.size() < keep) return std::numeric_limits<double>::infinity();
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(keep - 1), values.end());
  return values[keep - 1];
}

size_t kept(const SearchOptions& o) { return static_cast<size_t>(std::max<int64_t>(1, o.keep_best)); }

// The objective below which a plan not yet simulated can still matter: as the best of its GPU
// type (this search's best so far, or an earlier search's of the same type), or among the best
// `keep` of this search and the earlier ones ranked with it. Infinity while either is unknown.
double matters_below(const std::vector<double>& objectives, size_t keep, const SearchOptions& o) {
  const double own = objectives.empty() ? std::numeric_limits<double>::infinity() : *std::min_element(objectives.begin(), objectives.end());
  return std::max(std::min(own, o.gpu_type_best), std::min(kth_smallest(objectives, keep), o.rank_ceiling));
}

// Plans simulated together before the early stop is checked: a fixed number, so where the
// search stops does not depend on the thread count.
constexpr size_t kSimulationRound = 8;

// Event-simulates `chosen` (best screened first) on all threads, round by round, until the next
// candidate can neither enter the best o.keep_best nor be its GPU type's best (matters_below,
// SearchOptions::screen_margin): possibly none, for a search ranked after better ones. Sets the result's
// plans, simulated count, the screen's largest overestimate seen and the margin the stop used.
void simulate_chosen(const ModelSpec& model, const std::vector<ParallelPlan>& plans, const std::vector<ScreenedPlan>& chosen,
                     const Hardware& hw, const CostModelChoice& costs, const SearchOptions& o, SearchResult& result) {
  std::vector<RankedPlan> out(chosen.size());
  std::vector<double> objectives;
  const size_t keep = kept(o);
  double overestimate = 0.0;
  size_t done = 0;
  while (done < chosen.size()) {
    if (o.screen_margin >= 0 && chosen[done].score > matters_below(objectives, keep, o) * (1.0 + std::max(o.screen_margin, overestimate))) {
      result.stopped_early = true;
      break;
    }
    const size_t end = std::min(chosen.size(), done + kSimulationRound);
    std::atomic<size_t> next{done};
    auto worker = [&] {
      for (size_t k = next.fetch_add(1); k < end; k = next.fetch_add(1)) {
        const ParallelPlan& p = plans[chosen[k].index];
        const std::unique_ptr<CostModel> cost = costs.make(hw, p.precision, o.flash2_attention);
        out[k].prediction = predict_iteration(model, p, hw, *cost);
        out[k].screen_time_s = screen_plan(model, p, hw, *cost).iteration_time_s;
        fill_costs(out[k], model, o);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < std::min<int>(thread_count(o), static_cast<int>(end - done)); ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    for (size_t k = done; k < end; ++k) {
      objectives.push_back(objective_value(out[k], o.objective));
      if (objectives.back() > 0) overestimate = std::max(overestimate, chosen[k].score / objectives.back() - 1.0);
    }
    done = end;
  }
  out.resize(done);
  result.plans = std::move(out);
  result.simulated = static_cast<int64_t>(done);
  result.screen_overestimate = overestimate;
  result.screen_margin = o.screen_margin < 0 ? -1.0 : std::max(o.screen_margin, overestimate);
}

}  // namespace

ScreenedSearch screen_search(const ModelSpec& model, const Hardware& hw, const CostModelChoice& costs, const SearchOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ScreenedSearch s;
  s.plans = list_plans(model, o.space);
  SearchResult& out = s.result;
  out.evaluated = static_cast<int64_t>(s.plans.size());
  std::vector<Screened> feasible;
  Screened closest{std::numeric_limits<double>::infinity(), 0};
  for (const ThreadResult& r : screen_all(model, s.plans, hw, costs, o)) {
    feasible.insert(feasible.end(), r.feasible.begin(), r.feasible.end());
    for (const auto& [reason, count] : r.pruned) out.pruned[reason] += count;
    for (const auto& [reason, count] : r.left_out) out.left_out[reason] += count;
    keep_closest(closest, r.closest_miss);
  }
  if (std::isfinite(closest.score)) {
    out.closest_miss = s.plans[closest.index];
    out.closest_miss_bytes = closest.score;
  }
  out.feasible = static_cast<int64_t>(feasible.size());
  // Ties broken by enumeration order, so the result does not depend on the thread count.
  const size_t keep = std::min(feasible.size(), static_cast<size_t>(std::max<int64_t>(1, o.simulate_best)));
  std::partial_sort(feasible.begin(), feasible.begin() + static_cast<std::ptrdiff_t>(keep), feasible.end(),
                    [](const Screened& a, const Screened& b) { return a.score < b.score || (a.score == b.score && a.index < b.index); });
  feasible.resize(keep);
  // Only the chosen candidates are kept: searches ranked together are all screened before any is
  // simulated, and a space can hold 10^5 plans per search.
  std::vector<ParallelPlan> chosen_plans;
  chosen_plans.reserve(keep);
  for (Screened& f : feasible) {
    chosen_plans.push_back(s.plans[f.index]);
    f.index = chosen_plans.size() - 1;
  }
  s.plans = std::move(chosen_plans);
  s.chosen = std::move(feasible);
  s.screen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.screen_plans_per_s = s.screen_s > 0 ? static_cast<double>(out.evaluated) / s.screen_s : 0.0;
  return s;
}

SearchResult simulate_screened(const ModelSpec& model, const Hardware& hw, const CostModelChoice& costs, const SearchOptions& o,
                               ScreenedSearch screened) {
  const auto start = std::chrono::steady_clock::now();
  SearchResult out = std::move(screened.result);
  simulate_chosen(model, screened.plans, screened.chosen, hw, costs, o, out);
  std::stable_sort(out.plans.begin(), out.plans.end(), [&](const RankedPlan& a, const RankedPlan& b) {
    return objective_value(a, o.objective) < objective_value(b, o.objective);
  });
  out.elapsed_s = screened.screen_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

double rank_ceiling_after(const std::vector<const SearchResult*>& done, const SearchOptions& o) {
  std::vector<double> found;
  for (const SearchResult* r : done) {
    for (const RankedPlan& plan : r->plans) found.push_back(objective_value(plan, o.objective));
  }
  return kth_smallest(std::move(found), kept(o));
}

double gpu_type_best_after(const std::vector<const SearchResult*>& done, const std::string& gpu, const SearchOptions& o) {
  double best = std::numeric_limits<double>::infinity();
  for (const SearchResult* r : done) {
    for (const RankedPlan& plan : r->plans) {
      if (plan.prediction.hardware.gpu.name == gpu) best = std::min(best, objective_value(plan, o.objective));
    }
  }
  return best;
}

SearchResult search_plans(const ModelSpec& model, const Hardware& hw, const CostModelChoice& costs, const SearchOptions& o) {
  return simulate_screened(model, hw, costs, o, screen_search(model, hw, costs, o));
}

std::vector<size_t> pareto_front(const std::vector<RankedPlan>& plans) {
  std::vector<size_t> front;
  for (size_t i = 0; i < plans.size(); ++i) {
    const Prediction& a = plans[i].prediction;
    bool dominated = false;
    for (size_t j = 0; j < plans.size() && !dominated; ++j) {
      const Prediction& b = plans[j].prediction;
      const bool no_worse = b.iteration_time_s <= a.iteration_time_s && b.usd_per_iteration <= a.usd_per_iteration &&
                            b.hardware.gpus <= a.hardware.gpus;
      const bool better = b.iteration_time_s < a.iteration_time_s || b.usd_per_iteration < a.usd_per_iteration ||
                          b.hardware.gpus < a.hardware.gpus;
      dominated = j != i && no_worse && better;
    }
    if (!dominated) front.push_back(i);
  }
  return front;
}

}  // namespace trainsim
