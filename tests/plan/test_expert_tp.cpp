// Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size): the default, the
// plan's constraints, the expert grid's groups, the gathered copies and the sliced expert GEMMs,
// the experts' memory per rank, and Megatron's import default (expert TP = TP).
#include <catch2/catch.hpp>

#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "model/param_count.hpp"
#include "plan/lowering.hpp"
#include "plan/rank_grid.hpp"
#include "plan/rank_memory.hpp"
#include "sim/plan_space.hpp"
#include "tests/plan/op_lookup.hpp"

using namespace trainsim;
using trainsim::test::find_op;

namespace {

// Qwen3-30B-A3B on 32 GPUs: tp 2 with SP, dp 16, ep 8.
ParallelPlan tp_ep_plan(int64_t expert_tp) {
  ParallelPlan p;
  p.tp = 2;
  p.dp = 16;
  p.ep = 8;
  p.expert_tp = expert_tp;
  p.sequence_parallel = true;
  p.global_batch = 64;
  p.zero_stage = 1;
  return p;
}

}  // namespace

TEST_CASE("expert TP defaults to 1 with expert parallelism and to tp without, experts_like_dense only without EP at TP") {
  ParallelPlan p = tp_ep_plan(0);
  CHECK(p.expert_tp_size() == 1);
  CHECK_FALSE(p.experts_like_dense());
  p.ep = 1;
  CHECK(p.expert_tp_size() == 2);
  CHECK(p.experts_like_dense());
  p.expert_tp = 1;  // experts whole on every TP rank, each routing its sequence shard
  CHECK_FALSE(p.experts_like_dense());
}

TEST_CASE("expert TP must divide the experts' width, fit the stage's ranks with ep, and needs an MoE model and SP") {
  const ModelSpec qwen = resolve_model("qwen3-30b-a3b");  // expert_ffn_hidden 768
  CHECK(validate_plan(tp_ep_plan(2), qwen, "options").empty());
  CHECK(validate_plan(tp_ep_plan(1), qwen, "options").empty());
  CHECK_THAT(validate_plan(tp_ep_plan(5), qwen, "options").items()[0], Catch::Contains("must divide expert_ffn_hidden (768)"));
  ParallelPlan p = tp_ep_plan(4);  // 8 x 4 = 32 = tp x dp: fits
  CHECK(validate_plan(p, qwen, "options").empty());
  p.expert_tp = 8;  // 64 > 32
  CHECK_THAT(validate_plan(p, qwen, "options").items()[0], Catch::Contains("must divide tp x cp x dp (32)"));
  p = tp_ep_plan(1);
  p.ep = 1;
  p.sequence_parallel = false;
  CHECK_THAT(validate_plan(p, qwen, "options").items()[0], Catch::Contains("needs sequence parallelism"));
  p.expert_tp = 0;  // the experts a TP-split dense FFN: no SP needed
  CHECK(validate_plan(p, qwen, "options").empty());
  ParallelPlan dense;
  dense.expert_tp = 1;
  CHECK_THAT(validate_plan(dense, resolve_model("llama3-8b"), "options").items()[0], Catch::Contains("there are none"));
  // With experts apart from TP, tp need not divide the experts' width (only the shared experts').
  ParallelPlan wide = tp_ep_plan(1);
  wide.tp = 4;
  wide.dp = 8;
  ModelSpec odd = qwen;
  odd.moe->expert_ffn_hidden = 770;  // 770 / 4 is not whole
  CHECK(validate_plan(wide, odd, "options").empty());
  wide.expert_tp = 4;
  CHECK_THAT(validate_plan(wide, odd, "options").items()[0], Catch::Contains("must divide expert_ffn_hidden (770)"));
}

TEST_CASE("the expert grid etp-ep-dp: expert TP consecutive, EP every etp-th rank, expert DP every ep x etp-th") {
  ParallelPlan p = tp_ep_plan(2);
  const GroupScope etp = group_scope(p, GroupKind::kExpertTp, 8);
  CHECK(etp.size == 2);
  CHECK(etp.intra_node());
  const GroupScope ep = group_scope(p, GroupKind::kEp, 8);  // ranks 0, 2, ..., 14: two nodes
  CHECK(ep.size == 8);
  CHECK(ep.nodes == 2);
  CHECK(expert_dp(p) == 2);  // 32 / (8 x 2)
  CHECK(group_scope(p, GroupKind::kExpertDp, 8).nodes == 2);  // ranks 0 and 16
  p.expert_tp = 1;
  CHECK(group_scope(p, GroupKind::kEp, 8).intra_node());  // ranks 0 .. 7
  CHECK(expert_dp(p) == 4);
}

TEST_CASE("expert TP gathers the dispatched copies over its ranks and runs 1/etp of each expert on all of them") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");  // h 2048, 128 experts, top 8, expert_ffn_hidden 768
  const LayerWork w = lower_iteration(m, tp_ep_plan(2)).layer;
  const double tokens = 4096.0 / 2;  // the sequence-parallel shard this rank routes
  const double copy_bytes = tokens * 8 * 2048 * 2.0;
  REQUIRE(find_op(w.forward, "moe_dispatch") != nullptr);
  CHECK(find_op(w.forward, "moe_dispatch")->bytes == Approx(copy_bytes));
  const Op* gather = find_op(w.forward, "moe_dispatch_gather");
  const Op* scatter = find_op(w.forward, "moe_combine_scatter");
  REQUIRE(gather != nullptr);
  REQUIRE(scatter != nullptr);
  CHECK(gather->collective == CollectiveKind::kAllGather);
  CHECK(scatter->collective == CollectiveKind::kReduceScatter);
  CHECK(gather->group == GroupKind::kExpertTp);
  CHECK(gather->bytes == Approx(2 * copy_bytes));  // the copies of both expert-TP ranks
  CHECK(find_op(w.backward, "moe_combine_gather_bwd") != nullptr);
  CHECK(find_op(w.backward, "moe_dispatch_scatter_bwd") != nullptr);
  const Op* fc1 = find_op(w.forward, "fc1");
  REQUIRE(fc1 != nullptr);
  CHECK(fc1->batch == 16);             // 128 / ep 8 local experts
  CHECK(fc1->m == 2048 * 8 * 2 / 16);  // the gathered copies, spread over them
  CHECK(fc1->n == 2 * 768 / 2);        // SwiGLU's gate and up, each half an expert wide
  // Expert TP 1: no gather, whole experts.
  const LayerWork whole = lower_iteration(m, tp_ep_plan(1)).layer;
  CHECK(find_op(whole.forward, "moe_dispatch_gather") == nullptr);
  CHECK(find_op(whole.forward, "fc1")->n == 2 * 768);
}

TEST_CASE("expert TP splits the experts' weights: experts / (ep x etp) per rank, states over the expert-DP ranks") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const ParamCounts c = count_params(m);
  const StageMemory s = estimate_rank_memory(m, tp_ep_plan(2)).stages[0];
  CHECK(s.expert_params == 48 * (c.per_layer.mlp / 16));
  const double experts = static_cast<double>(s.expert_params), dense = static_cast<double>(s.params - s.expert_params);
  CHECK(s.memory.optimizer_bytes == Approx(12.0 * dense / 16.0 + 12.0 * experts / 2.0));
  // Without EP and expert TP 1, every rank holds every expert whole.
  ParallelPlan replicated = tp_ep_plan(1);
  replicated.ep = 1;
  CHECK(estimate_rank_memory(m, replicated).stages[0].expert_params == 48 * c.per_layer.mlp);
}

TEST_CASE("Megatron import: expert TP is --expert-tensor-parallel-size, or tp when absent (Megatron's default), export writes it") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const std::string base = "torchrun --nnodes 4 --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel "
                           "--expert-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 64 --bf16";
  CHECK(import_megatron(base, "job.sh", m, 0).plan.expert_tp == 2);
  CHECK(import_megatron(base + " --expert-tensor-parallel-size 1", "job.sh", m, 0).plan.expert_tp == 0);  // the default with EP
  CHECK(import_megatron("torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16", "job.sh",
                        resolve_model("llama3-8b"), 0)
            .plan.expert_tp == 0);  // no experts: not set
  CHECK_THAT(export_plan(&m, tp_ep_plan(2), 8, ExportTarget::kMegatron), Catch::Contains("--expert-tensor-parallel-size 2"));
  CHECK_THAT(export_plan(&m, tp_ep_plan(0), 8, ExportTarget::kMegatron), Catch::Contains("--expert-tensor-parallel-size 1"));
}

TEST_CASE("search tries expert TP 1 and tp for MoE plans with tp > 1, every plan valid") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  PlanSpaceOptions o;
  o.gpus = 16;
  o.global_batch = 64;
  o.max_micro_batch = 1;
  bool etp_1 = false, etp_tp = false;
  for (const ParallelPlan& p : list_plans(m, o)) {
    REQUIRE(validate_plan(p, m, "search").empty());
    if (p.tp == 2 && p.ep == 8) (p.expert_tp_size() == 1 ? etp_1 : etp_tp) = true;
  }
  CHECK(etp_1);
  CHECK(etp_tp);
}
