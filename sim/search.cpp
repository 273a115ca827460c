// Two-tier search: multi-threaded closed-form screen, then event simulation of the best.
#include "sim/search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/errors.hpp"
#include "sim/screen.hpp"

namespace trainsim {

namespace {

struct Screened {
  double score = 0;  // objective estimate (lower is better)
  size_t index = 0;
};

struct ThreadResult {
  std::vector<Screened> feasible;
  std::map<std::string, int64_t> pruned;
};

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
}

}  // namespace

double objective_value(const RankedPlan& r, Objective objective) {
  if (r.train_days > 0) return objective == Objective::kTime ? r.train_days : r.train_usd;
  return objective == Objective::kTime ? r.prediction.iteration_time_s : r.prediction.usd_per_iteration;
}

SearchResult search_plans(const ModelSpec& model, const Hardware& hw, const CostModelChoice& costs,
                          const SearchOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ParallelPlan> plans = list_plans(model, o.space);
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0}, done{0};
  std::vector<ThreadResult> results(static_cast<size_t>(threads));
  const double gpus = static_cast<double>(hw.gpus);

  auto worker = [&](ThreadResult& out) {
    constexpr size_t kChunk = 256;
    const std::unique_ptr<CostModel> priced = costs.make(hw, o.space.precision);
    const CostModel& cost = *priced;
    for (;;) {
      const size_t begin = next.fetch_add(kChunk);
      if (begin >= plans.size()) break;
      const size_t end = std::min(plans.size(), begin + kChunk);
      for (size_t i = begin; i < end; ++i) {
        const ParallelPlan& p = plans[i];
        ScreenEstimate e;
        try {
          e = screen_plan(model, p, hw, cost);
        } catch (const InputError&) {
          ++out.pruned["outside the profile's measurements"];
          continue;
        }
        if (!e.fits) {
          ++out.pruned["do not fit in memory"];
          continue;
        }
        double days = 0, usd = 0;
        const double usd_per_iteration = e.iteration_time_s / 3600.0 * gpus * hw.usd_per_gpu_hour;
        if (o.train_tokens > 0) {
          const double iterations = training_iterations(model, p, o.train_tokens);
          days = iterations * e.iteration_time_s / 86400.0;
          usd = iterations * usd_per_iteration;
          if (o.deadline_days > 0 && days > o.deadline_days) {
            ++out.pruned["miss the deadline"];
            continue;
          }
          if (o.budget_usd > 0 && usd > o.budget_usd) {
            ++out.pruned["over the budget"];
            continue;
          }
        }
        const double time_score = o.train_tokens > 0 ? days : e.iteration_time_s;
        const double cost_score = o.train_tokens > 0 ? usd : usd_per_iteration;
        out.feasible.push_back({o.objective == Objective::kTime ? time_score : cost_score, i});
      }
      done.fetch_add(end - begin);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, std::ref(results[static_cast<size_t>(t)]));
  if (o.progress) {
    // The calling thread reports progress while the others work, then joins in.
    std::thread reporter_work(worker, std::ref(results[0]));
    while (done.load() < plans.size()) {
      o.progress(plans.empty() ? 1.0 : static_cast<double>(done.load()) / static_cast<double>(plans.size()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    o.progress(1.0);
    reporter_work.join();
  } else {
    worker(results[0]);
  }
  for (auto& t : pool) t.join();

  SearchResult out;
  out.evaluated = static_cast<int64_t>(plans.size());
  std::vector<Screened> feasible;
  for (const ThreadResult& r : results) {
    feasible.insert(feasible.end(), r.feasible.begin(), r.feasible.end());
    for (const auto& [reason, count] : r.pruned) out.pruned[reason] += count;
  }
  out.feasible = static_cast<int64_t>(feasible.size());
  const double screen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.screen_plans_per_s = screen_s > 0 ? static_cast<double>(plans.size()) / screen_s : 0.0;

  // Ties broken by enumeration order, so the result does not depend on the thread count.
  const size_t keep = std::min(feasible.size(), static_cast<size_t>(std::max<int64_t>(1, o.simulate_best)));
  std::partial_sort(feasible.begin(), feasible.begin() + static_cast<std::ptrdiff_t>(keep), feasible.end(),
                    [](const Screened& a, const Screened& b) { return a.score < b.score || (a.score == b.score && a.index < b.index); });
  out.plans.resize(keep);
  std::atomic<size_t> next_sim{0};
  auto simulate_worker = [&]() {
    for (size_t k = next_sim.fetch_add(1); k < keep; k = next_sim.fetch_add(1)) {
      const ParallelPlan& p = plans[feasible[k].index];
      const std::unique_ptr<CostModel> cost = costs.make(hw, p.precision);
      RankedPlan& r = out.plans[k];
      r.prediction = predict_iteration(model, p, hw, *cost);
      r.screen_time_s = screen_plan(model, p, hw, *cost).iteration_time_s;
      fill_costs(r, model, o);
    }
  };
  std::vector<std::thread> sim_pool;
  for (int t = 1; t < threads; ++t) sim_pool.emplace_back(simulate_worker);
  simulate_worker();
  for (auto& t : sim_pool) t.join();
  out.simulated = static_cast<int64_t>(keep);
  std::stable_sort(out.plans.begin(), out.plans.end(), [&](const RankedPlan& a, const RankedPlan& b) {
    return objective_value(a, o.objective) < objective_value(b, o.objective);
  });
  out.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
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
