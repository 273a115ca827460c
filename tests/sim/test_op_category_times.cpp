// predict's per-op-category prices: on one pipeline stage they add up to the simulated compute
// and TP time and the optimizer step, and with PP the embedding and LM head land on their stages.
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {
Hardware a100(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("a100-sxm-80gb");
  hw.gpus = gpus;
  return hw;
}

SimulationOptions with_op_categories() {
  SimulationOptions options;
  options.op_categories = true;
  return options;
}

double column_sum(const std::array<double, kOpCategoryCount>& column) {
  double s = 0;
  for (size_t c = 0; c < kOpCategoryCount; ++c) {
    if (c != static_cast<size_t>(OpCategory::kOptimizer)) s += column[c];
  }
  return s;
}
}  // namespace

TEST_CASE("per-op-category prices of a one-stage plan add up to its compute, TP and optimizer time") {
  const ModelSpec m = resolve_model("gpt2-124m");
  for (const bool sp : {false, true}) {
    ParallelPlan p;
    p.tp = 2;
    p.global_batch = 4;
    p.micro_batch = 2;
    p.sequence_parallel = sp;
    p.recompute = Recompute::kSelective;
    const Hardware hw = a100(2);
    const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
    const Prediction r = predict_iteration(m, p, hw, cost, with_op_categories());
    const std::vector<OpCategoryTimes>& ops = r.op_categories;
    REQUIRE(ops.size() == 1);
    CHECK(column_sum(ops[0].forward_s) + column_sum(ops[0].backward_s) ==
          Approx(r.breakdown.compute_s - r.breakdown.host_idle_s + r.breakdown.tp_comm_exposed_s).epsilon(1e-9));  // ops priced alone: no host wait
    CHECK(ops[0].forward_s[static_cast<size_t>(OpCategory::kOptimizer)] == Approx(r.breakdown.optimizer_s).epsilon(1e-12));
    CHECK(ops[0].total_s(OpCategory::kTpComm) > 0);
    CHECK(ops[0].total_s(OpCategory::kOther) == 0);  // the runtime's unattributed time: never priced
  }
}

TEST_CASE("with a pipeline the first stage prices the embedding and the last the LM head and loss") {
  const ModelSpec m = resolve_model("gpt2-124m");
  ParallelPlan p;
  p.pp = 2;
  p.global_batch = 8;
  const Hardware hw = a100(2);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  const std::vector<OpCategoryTimes> ops = predict_iteration(m, p, hw, cost, with_op_categories()).op_categories;
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].total_s(OpCategory::kEmbedding) > 0);
  CHECK(ops[1].total_s(OpCategory::kEmbedding) == 0);
  CHECK(ops[0].total_s(OpCategory::kGemmLmHead) == 0);
  CHECK(ops[1].total_s(OpCategory::kGemmLmHead) > 0);
  CHECK(ops[1].total_s(OpCategory::kCrossEntropy) > 0);
  CHECK(ops[0].total_s(OpCategory::kGemmQkv) == Approx(ops[1].total_s(OpCategory::kGemmQkv)));  // 6 layers each
}
