// Partial full recomputation in the simulator: block N adds exactly N recomputed layer forwards per
// chunk and micro-batch (closed form under a GEMM-only cost model), block 0 predicts what no
// recompute predicts and block >= a chunk's layers what full does, per-op categories still add up,
// and the search tries the partial recomputation it is asked for.
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "sim/plan_space.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {

// Every GEMM but the LM head costs its FLOPs at 1 PFLOP/s; everything else is free.
class GemmOnlyCost final : public CostModel {
 public:
  explicit GemmOnlyCost(int64_t vocab) : vocab_(vocab) {}
  double gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const override {
    if (n == vocab_ || k == vocab_ || m == vocab_) return 0.0;
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch) / 1e15;
  }
  double attention_s(const Op&) const override { return 0.0; }
  double memory_bound_s(double) const override { return 0.0; }
  double collective_s(CollectiveKind, double, const GroupScope&) const override { return 0.0; }
  std::string describe() const override { return "test"; }
  int64_t sm_count() const override { return 132; }

 private:
  int64_t vocab_;
};

Hardware cluster(const char* gpu, int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu(gpu);
  hw.gpus = gpus;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  return hw;
}

ParallelPlan with_recompute(ParallelPlan p, Recompute r, RecomputeMethod method = RecomputeMethod::kUniform, int64_t n = 1) {
  p.recompute = r;
  p.recompute_method = method;
  p.recompute_layers = n;
  return p;
}

}  // namespace

TEST_CASE("block N adds N recomputed layer forwards per stage and micro-batch slot of a 1F1B pipeline") {
  const ModelSpec m = resolve_model("gpt3-1.3b");  // 24 layers, h 2048, GELU: 12 h^2 GEMM weights per layer
  const GemmOnlyCost cost(m.vocab);
  ParallelPlan p;
  p.pp = 2;
  p.micro_batch = 1;
  p.global_batch = 4;  // m = 4 micro-batches
  const Hardware hw = cluster("h100-sxm-80gb", 2);
  const double layer_forward_s = 2.0 * static_cast<double>(m.seq_len) * 12.0 * m.hidden * m.hidden / 1e15;
  const double none_s = predict_iteration(m, with_recompute(p, Recompute::kNone), hw, cost).iteration_time_s;
  for (const int64_t n : {0, 1, 5, 12}) {
    INFO("block " << n);
    const ParallelPlan block = with_recompute(p, Recompute::kFull, RecomputeMethod::kBlock, n);
    REQUIRE(validate_plan(block, m, "test").empty());
    // Both stages do the same work, so 1F1B takes (m + p - 1) stage steps: 5 of them.
    const double extra_s = predict_iteration(m, block, hw, cost).iteration_time_s - none_s;
    CHECK(extra_s == Approx(5.0 * static_cast<double>(n) * layer_forward_s).epsilon(1e-9).margin(1e-12));
  }
}

TEST_CASE("block 0 predicts no recompute's time and memory, block >= a chunk's layers full's, uniform 1 is full") {
  const ModelSpec m = resolve_model("gpt3-6.7b");  // 32 layers
  const Hardware hw = cluster("a100-sxm-80gb", 16);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  ParallelPlan p;
  p.dp = 2;
  p.tp = 2;
  p.pp = 4;
  p.vpp = 2;  // chunks of 4 layers
  p.schedule = Schedule::kInterleaved;
  p.sequence_parallel = true;
  p.global_batch = 32;
  const Prediction none = predict_iteration(m, with_recompute(p, Recompute::kNone), hw, cost);
  const Prediction full = predict_iteration(m, with_recompute(p, Recompute::kFull), hw, cost);
  const Prediction block0 = predict_iteration(m, with_recompute(p, Recompute::kFull, RecomputeMethod::kBlock, 0), hw, cost);
  CHECK(block0.iteration_time_s == none.iteration_time_s);
  CHECK(block0.memory.peak().memory.total_bytes() == none.memory.peak().memory.total_bytes());
  CHECK(block0.hfu == Approx(none.hfu).epsilon(1e-12));
  for (const int64_t n : {4, 5, 32}) {
    INFO("block " << n);
    const Prediction block = predict_iteration(m, with_recompute(p, Recompute::kFull, RecomputeMethod::kBlock, n), hw, cost);
    CHECK(block.iteration_time_s == full.iteration_time_s);
    CHECK(block.memory.peak().memory.total_bytes() == full.memory.peak().memory.total_bytes());
    CHECK(block.hfu == full.hfu);
  }
  const Prediction block2 = predict_iteration(m, with_recompute(p, Recompute::kFull, RecomputeMethod::kBlock, 2), hw, cost);
  CHECK(block2.iteration_time_s > none.iteration_time_s);
  CHECK(block2.iteration_time_s < full.iteration_time_s);
  CHECK(block2.memory.peak().memory.activations_bytes > full.memory.peak().memory.activations_bytes);
  CHECK(block2.memory.peak().memory.activations_bytes < none.memory.peak().memory.activations_bytes);
  CHECK(block2.hfu > block2.mfu);
  // Uniform N recomputes every layer: full's time; it keeps fewer inputs but rebuilds N layers at once.
  const Prediction uniform2 = predict_iteration(m, with_recompute(p, Recompute::kFull, RecomputeMethod::kUniform, 2), hw, cost);
  CHECK(uniform2.iteration_time_s == full.iteration_time_s);
  CHECK(uniform2.memory.peak().memory.activations_bytes != full.memory.peak().memory.activations_bytes);
}

TEST_CASE("with block recompute the per-op categories still add up to the compute and TP time") {
  const ModelSpec m = resolve_model("gpt2-124m");  // 12 layers
  ParallelPlan p = with_recompute(ParallelPlan{}, Recompute::kFull, RecomputeMethod::kBlock, 5);
  p.tp = 2;
  p.global_batch = 4;
  p.micro_batch = 2;
  const Hardware hw = cluster("a100-sxm-80gb", 2);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  SimulationOptions options;
  options.op_categories = true;
  const Prediction r = predict_iteration(m, p, hw, cost, options);
  const std::vector<OpCategoryTimes>& ops = r.op_categories;
  REQUIRE(ops.size() == 1);
  double sum = 0;
  for (size_t c = 0; c < kOpCategoryCount; ++c) {
    if (c != static_cast<size_t>(OpCategory::kOptimizer)) sum += ops[0].forward_s[c] + ops[0].backward_s[c];
  }
  CHECK(sum == Approx(r.breakdown.compute_s - r.breakdown.host_idle_s + r.breakdown.tp_comm_exposed_s).epsilon(1e-9));  // ops priced alone: no host wait
}

TEST_CASE("the search tries the partial recomputation asked for, once, besides none, selective and full") {
  const ModelSpec m = resolve_model("gpt3-6.7b");
  PlanSpaceOptions space;
  space.gpus = 16;
  space.global_batch = 64;
  space.max_micro_batch = 2;
  const int64_t plain = enumerate_plans(m, space, [](const ParallelPlan& p) { CHECK(p.recompute_layers == 1); });
  space.partial_recompute_method = RecomputeMethod::kBlock;
  space.partial_recompute_layers = 2;
  int64_t partial = 0;
  const int64_t with_partial = enumerate_plans(m, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, m, "space").empty());
    if (p.recompute_method != RecomputeMethod::kBlock) return;
    ++partial;
    // A block of every layer of each chunk is full recompute, already tried.
    for (int64_t stage = 0; stage < p.pp; ++stage) CHECK(layers_on_stage(m, p, stage) / p.vpp > 2);
  });
  CHECK(partial > 0);
  CHECK(with_partial == plain + partial);
}
