// Search speed. (1) The real `search` for GPT-3 175B on 512 A100s (global batch 1536, micro-batch
// up to 64): candidates, feasible, wall time. (2) Screening throughput on a space the size of
// Calculon's for the same case (1,096,832 candidates): our space is smaller (we do not enumerate
// Calculon's implementation knobs), so its plans are screened repeatedly until that many screens
// are done, on all cores. Run: build/bench_search
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "model/model_catalog.hpp"
#include "sim/plan_space.hpp"
#include "sim/screen.hpp"
#include "sim/search.hpp"

using namespace trainsim;

int main() {
  const ModelSpec m = resolve_model("gpt3-175b");
  Hardware hw;
  hw.gpu = find_gpu("a100-sxm-80gb");
  hw.gpus = 512;
  hw.usd_per_gpu_hour = hw.gpu.usd_per_gpu_hour;
  SearchOptions o;
  o.space.gpus = 512;
  o.space.global_batch = 1536;
  o.space.max_micro_batch = 64;
  const auto t0 = std::chrono::steady_clock::now();
  const SearchResult r = search_plans(m, hw, CostModelChoice{}, o);
  const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("search GPT-3 175B / 512 A100: %lld candidates, %lld feasible, %lld simulated, %.3f s\n",
              static_cast<long long>(r.evaluated), static_cast<long long>(r.feasible), static_cast<long long>(r.simulated),
              search_s);

  const std::vector<ParallelPlan> plans = list_plans(m, o.space);
  const size_t target = 1096832;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::atomic<int64_t> fits{0};
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
      int64_t local = 0;
      for (size_t i = next.fetch_add(1); i < target; i = next.fetch_add(1)) {
        local += screen_plan(m, plans[i % plans.size()], hw, cost).fits ? 1 : 0;
      }
      fits += local;
    });
  }
  for (auto& t : pool) t.join();
  const double screen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf("screened %zu candidates on %u threads in %.2f s (%.0f plans/s)\n", target, threads, screen_s,
              static_cast<double>(target) / screen_s);
  return 0;
}
