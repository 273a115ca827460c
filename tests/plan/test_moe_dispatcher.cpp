// MoE token dispatchers (Megatron-Core's --moe-token-dispatcher-type): the all-gather dispatcher's
// collectives and bytes against the all-to-all's, its group, Megatron's default on import, export.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/plan_json.hpp"
#include "plan/rank_grid.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"
#include "tests/plan/op_lookup.hpp"

using namespace trainsim;
using trainsim::test::find_op;

namespace {

// Qwen3-30B-A3B on 16 GPUs, dp 16, ep 8.
ParallelPlan ep_plan(MoeDispatcher dispatcher) {
  ParallelPlan p;
  p.dp = 16;
  p.ep = 8;
  p.global_batch = 64;
  p.moe_dispatcher = dispatcher;
  return p;
}

}  // namespace

TEST_CASE("the all-gather dispatcher gathers every token of the EP group and reduce-scatters the fp32 outputs") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");  // h 2048, 128 experts, top 8
  const LayerWork w = lower_iteration(m, ep_plan(MoeDispatcher::kAllGather)).layer;
  const double tokens = 4096, h = 2048;
  const Op* dispatch = find_op(w.forward, "moe_dispatch");
  const Op* probs = find_op(w.forward, "moe_dispatch_probs");
  const Op* combine = find_op(w.forward, "moe_combine");
  REQUIRE(dispatch != nullptr);
  REQUIRE(probs != nullptr);
  REQUIRE(combine != nullptr);
  CHECK(dispatch->collective == CollectiveKind::kAllGather);
  CHECK(dispatch->group == GroupKind::kExpertTpEp);
  CHECK(dispatch->bytes == Approx(8 * tokens * h * 2));       // 8 ranks' tokens, bf16
  CHECK(probs->bytes == Approx(8 * tokens * 128 * (4 + 1)));  // fp32 probabilities and the routing map
  CHECK(combine->collective == CollectiveKind::kReduceScatter);
  CHECK(combine->bytes == Approx(8 * tokens * h * 4));  // in the probabilities' fp32
  CHECK(find_op(w.backward, "moe_dispatch_bwd")->collective == CollectiveKind::kReduceScatter);
  CHECK(find_op(w.backward, "moe_combine_bwd")->collective == CollectiveKind::kAllGather);
  // The experts see what the all-to-all brings them: 16 local experts, 4096 x 8 / 16 copies each.
  const LayerWork a2a = lower_iteration(m, ep_plan(MoeDispatcher::kAllToAll)).layer;
  CHECK(find_op(w.forward, "fc1")->m == find_op(a2a.forward, "fc1")->m);
  CHECK(find_op(w.forward, "fc1")->m == 4096 * 8 / 16);
  CHECK(find_op(a2a.forward, "moe_dispatch")->collective == CollectiveKind::kAllToAll);
}

TEST_CASE("the all-gather dispatcher's group spans expert TP x EP consecutive ranks") {
  ParallelPlan p = ep_plan(MoeDispatcher::kAllGather);
  p.tp = 2;
  p.dp = 8;
  p.sequence_parallel = true;
  p.expert_tp = 2;
  const GroupScope g = group_scope(p, GroupKind::kExpertTpEp, 8);
  CHECK(g.size == 16);
  CHECK(g.nodes == 2);
  CHECK(validate_plan(p, resolve_model("qwen3-30b-a3b"), "options").empty());
  ParallelPlan dense;
  dense.moe_dispatcher = MoeDispatcher::kAllGather;
  CHECK_THAT(validate_plan(dense, resolve_model("llama3-8b"), "options").items()[0], Catch::Contains("moe_dispatcher allgather describes expert routing"));
}

TEST_CASE("Megatron import: no --moe-token-dispatcher-type is Megatron-Core's allgather, export writes the dispatcher, plan JSON keeps it") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const std::string base = "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --expert-model-parallel-size 8 "
                           "--micro-batch-size 1 --global-batch-size 64 --bf16";
  CHECK(import_megatron(base, "job.sh", m, 0).plan.moe_dispatcher == MoeDispatcher::kAllGather);
  CHECK(import_megatron(base + " --moe-token-dispatcher-type alltoall", "job.sh", m, 0).plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK(import_megatron(base + " --moe-token-dispatcher-type flex", "job.sh", m, 0).plan.moe_dispatcher == MoeDispatcher::kFlex);
  const ImportedJob odd = import_megatron(base + " --moe-token-dispatcher-type deepep", "job.sh", m, 0);
  CHECK(odd.plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  REQUIRE_FALSE(odd.not_modeled.empty());
  CHECK_THAT(odd.not_modeled.back(), Catch::Contains("deepep (modeled as alltoall)"));
  const ParallelPlan gather = ep_plan(MoeDispatcher::kAllGather);
  CHECK_THAT(export_plan(&m, gather, 8, ExportTarget::kMegatron), Catch::Contains("--moe-token-dispatcher-type allgather"));
  CHECK_THAT(export_plan(&m, ep_plan(MoeDispatcher::kAllToAll), 8, ExportTarget::kMegatron), Catch::Contains("--moe-token-dispatcher-type alltoall"));
  CHECK(plan_to_json(gather)["moe_dispatcher"] == "allgather");
  CHECK_FALSE(plan_to_json(ep_plan(MoeDispatcher::kAllToAll)).contains("moe_dispatcher"));
}

TEST_CASE("the flex dispatcher sends a token once to each other node holding one of its experts") {
  // Closed form: with 128 experts over 2 nodes and top 8, a token misses the other node with
  // probability C(64, 8) / C(128, 8); over 8 nodes it reaches 7 (1 - C(112, 8) / C(128, 8)) others.
  const auto choose = [](double n, int k) {
    double c = 1;
    for (int i = 0; i < k; ++i) c *= (n - i) / (i + 1);
    return c;
  };
  CHECK(expected_remote_nodes(128, 8, 2) == Approx(1.0 - choose(64, 8) / choose(128, 8)));
  CHECK(expected_remote_nodes(128, 8, 8) == Approx(7.0 * (1.0 - choose(112, 8) / choose(128, 8))));
  CHECK(expected_remote_nodes(128, 8, 1) == 0.0);
  CHECK(expected_remote_nodes(8, 8, 4) == Approx(3.0));  // every expert chosen: every node reached

  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = 16;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  EfficiencyConstants c;
  c.kernel_overhead_s = 0;
  c.collective_step_intra_s = 0;
  c.collective_step_inter_s = 0;
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = ep_plan(MoeDispatcher::kFlex);
  p.ep = 16;
  REQUIRE(validate_plan(p, m, "options").empty());
  const LayerWork w = lower_iteration(m, p).layer;
  const Op* dispatch = find_op(w.forward, "moe_dispatch");
  REQUIRE(dispatch != nullptr);
  CHECK(dispatch->dedup_top_k == 8);
  CHECK(dispatch->dedup_experts == 128);
  const GroupScope ep = group_scope(p, GroupKind::kEp, 8);  // 16 ranks over 2 nodes
  // The network carries each token once per other node reached (the rail all-to-all of 2 ranks
  // puts half its buffer on the wire); NVLink the copies inside the node. The longer shows.
  const double token_bytes = 4096.0 * 2048 * 2, nic = 400e9 / 8 * c.network_bandwidth_fraction;
  const double network_s = token_bytes * expected_remote_nodes(128, 8, 2) / nic;
  const double nvlink_s = cost.collective_s(CollectiveKind::kAllToAll, dispatch->bytes, GroupScope{8, 8, 1});
  CHECK(cost.op_s(*dispatch, ep) == Approx(std::max(network_s, nvlink_s)));
  Op nccl = *dispatch;
  nccl.dedup_top_k = 0;
  CHECK(cost.op_s(*dispatch, ep) < 0.5 * cost.op_s(nccl, ep));  // 8 copies of which 4 cross, against ~1
  // Inside one node the two are the same exchange.
  CHECK(cost.op_s(*dispatch, GroupScope{8, 8, 1}) == Approx(cost.op_s(nccl, GroupScope{8, 8, 1})));
  // Flex needs expert parallelism and expert TP 1.
  p.ep = 1;
  CHECK_THAT(validate_plan(p, m, "options").items()[0], Catch::Contains("moe_dispatcher flex (DeepEP / HybridEP) needs ep > 1"));
}
