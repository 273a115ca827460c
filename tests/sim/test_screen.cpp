// The closed-form screen against the event simulator over a sweep of plans: the search ranks
// by the screen and re-simulates the best, so the screen must track the simulator closely.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "model/model_catalog.hpp"
#include "sim/plan_space.hpp"
#include "sim/screen.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {
struct ScreenError {
  double mean = 0, max = 0;
  int64_t plans = 0;
};

// Every plan of the space (with `zero_bubble`: only its Zero Bubble plans).
ScreenError sweep(const char* model_name, const char* gpu, int64_t gpus, int64_t global_batch,
                  const std::vector<Schedule>& zero_bubble = {}) {
  const ModelSpec m = resolve_model(model_name);
  PlanSpaceOptions o;
  o.zero_bubble = zero_bubble;
  o.gpus = gpus;
  o.global_batch = global_batch;
  o.max_micro_batch = 4;
  o.max_vpp = 4;
  Hardware hw;
  hw.gpu = find_gpu(gpu);
  hw.gpus = gpus;
  const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
  ScreenError e;
  enumerate_plans(m, o, [&](const ParallelPlan& p) {
    if (!zero_bubble.empty() && !is_zero_bubble(p.schedule)) return;
    const double simulated = predict_iteration(m, p, hw, cost).iteration_time_s;
    const double screened = screen_plan(m, p, hw, cost).iteration_time_s;
    const double error = std::fabs(screened / simulated - 1.0);
    e.mean += error;
    e.max = std::max(e.max, error);
    ++e.plans;
  });
  e.mean /= static_cast<double>(e.plans);
  std::printf("screen vs simulator, %s on %lld x %s%s: %lld plans, mean |error| %.2f%%, max %.2f%%\n", model_name,
              static_cast<long long>(gpus), gpu, zero_bubble.empty() ? "" : ", Zero Bubble plans", static_cast<long long>(e.plans),
              100 * e.mean, 100 * e.max);
  return e;
}
}  // namespace

TEST_CASE("the screen tracks the simulator: GPT-3 6.7B on 64 A100s") {
  const ScreenError e = sweep("gpt3-6.7b", "a100-sxm-80gb", 64, 256);
  CHECK(e.plans > 100);
  CHECK(e.mean <= 0.02);
  CHECK(e.max <= 0.10);
}

TEST_CASE("the screen tracks the simulator: Llama-3 70B on 128 H100s") {
  const ScreenError e = sweep("llama3-70b", "h100-sxm-80gb", 128, 256);
  CHECK(e.plans > 100);
  CHECK(e.mean <= 0.02);
  CHECK(e.max <= 0.10);
}

TEST_CASE("the screen tracks the simulator on Zero Bubble plans: GPT-3 6.7B on 64 A100s") {
  for (Schedule s : {Schedule::kZeroBubble1p, Schedule::kZeroBubble2p, Schedule::kZeroBubbleV}) {
    const ScreenError e = sweep("gpt3-6.7b", "a100-sxm-80gb", 64, 256, {s});
    INFO(to_string(s));
    CHECK(e.plans > 50);
    CHECK(e.mean <= 0.05);
  }
}
