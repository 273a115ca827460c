// Megatron-Core's EP communication overlap (--overlap-moe-expert-parallel-comm, plan key
// ep_comm_overlap): the combined 1F1B's three slots priced by hand on a synthetic layer, the
// checks Megatron-Core makes, and the key through plan JSON, Megatron import and export.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/plan_json.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/simulator.hpp"
#include "sim/step_cost.hpp"

using namespace trainsim;

namespace {

// Every op costs its bytes in nanoseconds.
class ByteCost final : public CostModel {
 public:
  double gemm_s(int64_t, int64_t, int64_t, int64_t) const override { return 0.0; }
  double attention_s(const Op&) const override { return 0.0; }
  double memory_bound_s(double bytes) const override { return bytes * 1e-9; }
  double collective_s(CollectiveKind, double bytes, const GroupScope&) const override { return bytes * 1e-9; }
  std::string describe() const override { return "bytes"; }
  int64_t sm_count() const override { return 132; }
};

Op work(const char* name, double ms) {
  Op op;
  op.name = name;
  op.bytes = ms * 1e6;
  return op;
}

Op exchange(const char* name, double ms) {
  Op op = work(name, ms);
  op.kind = OpKind::kCollective;
  op.collective = CollectiveKind::kAllToAll;
  op.group = GroupKind::kEp;
  return op;
}

// One stage, one layer: forward 3 + [2] + 4 + [2] + 1 ms, backward 6 + [2] + 8 + [2] + 2 ms.
IterationWork synthetic_layer(bool overlap) {
  IterationWork w;
  w.layer.forward = {work("pre", 3), exchange("moe_dispatch", 2), work("experts", 4), exchange("moe_combine", 2), work("post", 1)};
  w.layer.backward = {work("pre_bwd", 6), exchange("moe_dispatch_bwd", 2), work("experts_bwd", 8), exchange("moe_combine_bwd", 2),
                      work("post_bwd", 2)};
  StageWork stage;
  stage.layers = 1;
  stage.chunk_layers = {1};
  stage.chunk_recomputed_layers = {0};
  w.stages.push_back(stage);
  w.ep_overlap_paired_share = overlap ? 1.0 : 0.0;
  return w;
}

ParallelPlan qwen_ep8() {
  ParallelPlan p;
  p.dp = 16;
  p.ep = 8;
  p.global_batch = 64;
  return p;
}

}  // namespace

TEST_CASE("the combined 1F1B: three slots, each the longer stream plus 18.9% of the shorter, the saving off the exchanges") {
  const ByteCost cost;
  const LayerScopes scopes{GroupScope{}};
  const std::vector<StepCost> alone = price_steps(synthetic_layer(false), 1, cost, scopes);
  REQUIRE(alone.size() == 2);
  CHECK(alone[0].compute_s == Approx(8e-3));
  CHECK(alone[0].tp_s == Approx(4e-3));
  CHECK(alone[1].tp_s == Approx(4e-3));
  // Slots: combine_bwd 2 | fwd outer 3 + 1; dispatch fwd + bwd 4 | experts bwd + fwd 12; combine 2 | bwd outer 8.
  const double pair = (4 + 0.189 * 2) + (12 + 0.189 * 4) + (8 + 0.189 * 2);
  const double saving = (12 + 20) - pair;  // 6.488 ms, shared by the equal exchanges
  const std::vector<StepCost> paired = price_steps(synthetic_layer(true), 1, cost, scopes);
  CHECK(paired[0].compute_s == Approx(8e-3));
  CHECK(paired[0].tp_s == Approx((4 - saving / 2) * 1e-3));
  CHECK(paired[1].tp_s == Approx((4 - saving / 2) * 1e-3));
  CHECK(paired[0].total() + paired[1].total() == Approx(pair * 1e-3));
}

TEST_CASE("EP overlap on Qwen3-30B: less exposed communication, the same compute") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = 16;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  ParallelPlan p = qwen_ep8();
  p.ep = 16;
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  const Prediction off = predict_iteration(m, p, hw, cost);
  p.ep_comm_overlap = true;
  const Prediction on = predict_iteration(m, p, hw, cost);
  CHECK(on.breakdown.tp_comm_exposed_s < 0.8 * off.breakdown.tp_comm_exposed_s);
  CHECK(on.breakdown.compute_s == Approx(off.breakdown.compute_s));
  CHECK(on.iteration_time_s < off.iteration_time_s);
}

TEST_CASE("EP overlap pairs every pass but the warm-up's forwards and the cool-down's backwards") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = qwen_ep8();  // 4 micro-batches per rank
  CHECK(lower_iteration(m, p).ep_overlap_paired_share == 0.0);
  p.ep_comm_overlap = true;
  CHECK(lower_iteration(m, p).ep_overlap_paired_share == Approx(3.0 / 4));
  p.pp = 2;
  p.dp = 8;
  p.vpp = 4;
  p.schedule = Schedule::kInterleaved;
  p.global_batch = 128;  // 16 micro-batches x 4 chunks; warm-up (2 - 1) x 2 + 3 x 2 = 8
  CHECK(lower_iteration(m, p).ep_overlap_paired_share == Approx(56.0 / 64));
}

TEST_CASE("EP overlap needs expert parallelism, alltoall or flex, no full recompute, and interleaving with a pipeline") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = qwen_ep8();
  p.ep_comm_overlap = true;
  CHECK(validate_plan(p, m, "options").empty());
  const auto first = [&](const ParallelPlan& q) { return validate_plan(q, m, "options").items().at(0); };
  ParallelPlan q = p;
  q.ep = 1;
  CHECK_THAT(first(q), Catch::Contains("needs ep > 1"));
  q = p;
  q.moe_dispatcher = MoeDispatcher::kAllGather;
  CHECK_THAT(first(q), Catch::Contains("alltoall or flex"));
  q = p;
  q.recompute = Recompute::kFull;
  CHECK_THAT(first(q), Catch::Contains("recompute other than full"));
  q = p;
  q.pp = 2;
  q.dp = 8;
  CHECK_THAT(first(q), Catch::Contains("interleaved schedule"));
  q.vpp = 2;
  q.schedule = Schedule::kInterleaved;
  CHECK(validate_plan(q, m, "options").empty());
}

TEST_CASE("EP overlap through plan JSON, Megatron's --overlap-moe-expert-parallel-comm and export") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = qwen_ep8();
  CHECK_FALSE(plan_to_json(p).contains("ep_comm_overlap"));
  p.ep_comm_overlap = true;
  CHECK(plan_to_json(p)["ep_comm_overlap"] == true);
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--overlap-moe-expert-parallel-comm"));
  const std::string base = "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --expert-model-parallel-size 8 "
                           "--micro-batch-size 1 --global-batch-size 64 --bf16 --moe-token-dispatcher-type alltoall";
  const ImportedJob with = import_megatron(base + " --overlap-moe-expert-parallel-comm", "job.sh", m, 0);
  CHECK(with.plan.ep_comm_overlap);
  CHECK(with.not_modeled.empty());
  CHECK_FALSE(import_megatron(base, "job.sh", m, 0).plan.ep_comm_overlap);
}
