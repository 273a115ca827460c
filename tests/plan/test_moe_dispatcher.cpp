// MoE token dispatchers (Megatron-Core's --moe-token-dispatcher-type): the all-gather dispatcher's
// collectives and bytes against the all-to-all's, its group, Megatron's default on import, export.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/plan_export.hpp"
#include "plan/plan_import.hpp"
#include "plan/plan_json.hpp"
#include "plan/rank_grid.hpp"

using namespace trainsim;

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

const Op* find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (name == op.name) return &op;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the all-gather dispatcher gathers every token of the EP group and reduce-scatters the fp32 outputs") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");  // h 2048, 128 experts, top 8
  const LayerWork w = lower_iteration(m, ep_plan(MoeDispatcher::kAllGather)).layer;
  const double tokens = 4096, h = 2048;
  const Op* dispatch = find(w.forward, "moe_dispatch");
  const Op* probs = find(w.forward, "moe_dispatch_probs");
  const Op* combine = find(w.forward, "moe_combine");
  REQUIRE(dispatch != nullptr);
  REQUIRE(probs != nullptr);
  REQUIRE(combine != nullptr);
  CHECK(dispatch->collective == CollectiveKind::kAllGather);
  CHECK(dispatch->group == GroupKind::kExpertTpEp);
  CHECK(dispatch->bytes == Approx(8 * tokens * h * 2));       // 8 ranks' tokens, bf16
  CHECK(probs->bytes == Approx(8 * tokens * 128 * (4 + 1)));  // fp32 probabilities and the routing map
  CHECK(combine->collective == CollectiveKind::kReduceScatter);
  CHECK(combine->bytes == Approx(8 * tokens * h * 4));  // in the probabilities' fp32
  CHECK(find(w.backward, "moe_dispatch_bwd")->collective == CollectiveKind::kReduceScatter);
  CHECK(find(w.backward, "moe_combine_bwd")->collective == CollectiveKind::kAllGather);
  // The experts see what the all-to-all brings them: 16 local experts, 4096 x 8 / 16 copies each.
  const LayerWork a2a = lower_iteration(m, ep_plan(MoeDispatcher::kAllToAll)).layer;
  CHECK(find(w.forward, "fc1")->m == find(a2a.forward, "fc1")->m);
  CHECK(find(w.forward, "fc1")->m == 4096 * 8 / 16);
  CHECK(find(a2a.forward, "moe_dispatch")->collective == CollectiveKind::kAllToAll);
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

TEST_CASE("Megatron import: no --moe-token-dispatcher-type is Megatron-Core's allgather; export writes the dispatcher; plan JSON keeps it") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const std::string base = "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --expert-model-parallel-size 8 "
                           "--micro-batch-size 1 --global-batch-size 64 --bf16";
  CHECK(import_megatron(base, "job.sh", m, 0).plan.moe_dispatcher == MoeDispatcher::kAllGather);
  CHECK(import_megatron(base + " --moe-token-dispatcher-type alltoall", "job.sh", m, 0).plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  const ImportedJob flex = import_megatron(base + " --moe-token-dispatcher-type flex", "job.sh", m, 0);
  CHECK(flex.plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  REQUIRE_FALSE(flex.not_modeled.empty());
  CHECK_THAT(flex.not_modeled.back(), Catch::Contains("flex (modeled as alltoall)"));
  const ParallelPlan gather = ep_plan(MoeDispatcher::kAllGather);
  CHECK_THAT(export_plan(&m, gather, 8, ExportTarget::kMegatron), Catch::Contains("--moe-token-dispatcher-type allgather"));
  CHECK_THAT(export_plan(&m, ep_plan(MoeDispatcher::kAllToAll), 8, ExportTarget::kMegatron), Catch::Contains("--moe-token-dispatcher-type alltoall"));
  CHECK(plan_to_json(gather)["moe_dispatcher"] == "allgather");
  CHECK_FALSE(plan_to_json(ep_plan(MoeDispatcher::kAllToAll)).contains("moe_dispatcher"));
}
