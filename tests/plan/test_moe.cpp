// Mixture-of-experts layers under expert parallelism: the plan's constraints, the all-to-all bytes
// per token, the grouped expert GEMMs, and an MoE layer's memory per rank by hand.
#include <catch2/catch.hpp>

#include "common/op_category.hpp"
#include "model/model_catalog.hpp"
#include "model/param_count.hpp"
#include "plan/lowering.hpp"
#include "plan/rank_grid.hpp"
#include "plan/rank_memory.hpp"

using namespace trainsim;

namespace {

// Qwen3-30B-A3B with Megatron-Bridge's layout: 16 GPUs, dp 16, ep 16, ZeRO-1.
ParallelPlan qwen_plan() {
  ParallelPlan p;
  p.dp = 16;
  p.ep = 16;
  p.global_batch = 64;
  p.zero_stage = 1;
  return p;
}

const Op& find_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (name == op.name) return op;
  }
  FAIL("no op " << name);
  return ops.front();
}

}  // namespace

TEST_CASE("expert parallelism needs an MoE model, experts and stage ranks it divides, and SP with TP") {
  const ModelSpec qwen = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = qwen_plan();
  CHECK(validate_plan(p, qwen, "options").empty());
  CHECK_THAT(validate_plan(p, resolve_model("llama3-8b"), "options").items()[0], Catch::Contains("needs a mixture-of-experts model"));
  p.ep = 48;  // 128 experts
  p.dp = 48;
  p.global_batch = 48;
  CHECK_THAT(validate_plan(p, qwen, "options").items()[0], Catch::Contains("must divide the experts (128)"));
  p = qwen_plan();
  p.dp = 8;
  p.global_batch = 64;
  CHECK_THAT(validate_plan(p, qwen, "options").items()[0], Catch::Contains("must divide tp x cp x dp (8)"));
  p = qwen_plan();
  p.tp = 2;
  p.dp = 8;
  CHECK_THAT(validate_plan(p, qwen, "options").items()[0], Catch::Contains("needs sequence parallelism"));
  p.sequence_parallel = true;
  CHECK(validate_plan(p, qwen, "options").empty());
}

TEST_CASE("the dispatch and combine all-to-alls move top_k copies of every token's hidden state each way") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");  // h 2048, 128 experts, top 8
  ParallelPlan p = qwen_plan();
  const LayerWork w = lower_iteration(m, p).layer;
  const double tokens = 4096.0;  // one sequence per micro-batch, no TP
  const double copy_bytes = tokens * 8 * 2048 * 2.0;
  for (const char* name : {"moe_dispatch", "moe_combine"}) {
    const Op& op = find_op(w.forward, name);
    CHECK(op.collective == CollectiveKind::kAllToAll);
    CHECK(op.group == GroupKind::kEp);
    CHECK(op.bytes == Approx(copy_bytes));  // 2 x top_k x h bytes per token and direction in bf16
  }
  for (const char* name : {"moe_dispatch_bwd", "moe_combine_bwd"}) CHECK(find_op(w.backward, name).bytes == Approx(copy_bytes));
  // 8 local experts, each with the mean share of the 4096 x 8 copies: one grouped GEMM per linear.
  const Op& fc1 = find_op(w.forward, "fc1");
  CHECK(fc1.batch == 8);
  CHECK(fc1.m == 4096);
  CHECK(fc1.n == 2 * 768);  // SwiGLU's gate and up
  CHECK(fc1.k == 2048);
  CHECK(find_op(w.forward, "router").n == 128);
  // Every expert FLOP is there: 2 x copies x (3 matrices of h x f).
  double expert_flops = 0;
  for (const Op& op : w.forward) {
    if (std::string(op.name) == "fc1" || std::string(op.name) == "fc2") expert_flops += op.flops();
  }
  CHECK(expert_flops == Approx(2.0 * tokens * 8 * 3 * 2048 * 768));
}

TEST_CASE("biased experts: Megatron-Core's per-expert bias loop moves fp32 sums and issues eager ops per local expert, the op fuser none") {
  const ModelSpec m = resolve_model("gpt-oss-120b");  // h 2880, 128 experts, top 4, biases on every linear
  REQUIRE(m.linear_bias);
  ParallelPlan p;
  p.dp = 8;
  p.ep = 8;
  p.global_batch = 8;
  const LayerWork w = lower_iteration(m, p).layer;
  const double elements = 4096.0 * 4 * 2880;  // the copies this rank's 16 experts run, x hidden
  const Op& forward = find_op(w.forward, "expert_bias_add");
  // b x p written in fp32, added to the bf16 output (fp32 sum), torch.cat's copy, the cast down.
  CHECK(forward.bytes == Approx(elements * (4 + (2 + 8) + 8 + 6)));
  CHECK(forward.eager_ops == 2 * 16 + 4);
  CHECK_FALSE(forward.backward);
  const Op& backward = find_op(w.backward, "expert_bias_add_bwd");
  // the cast's gradient up, t's down, b's and p's products and sums, t's pieces concatenated.
  CHECK(backward.bytes == Approx(elements * (6 + 6 + 24 + 4)));
  CHECK(backward.eager_ops == 2 * 16 + 4);
  CHECK(backward.backward);
  CHECK(forward.graph_scope == kGraphMoe);
  p.te_op_fuser = true;  // the bias inside Transformer Engine's fused grouped MLP
  for (const Op& op : lower_iteration(m, p).layer.forward) CHECK(std::string(op.name) != "expert_bias_add");
  const ModelSpec qwen = resolve_model("qwen3-30b-a3b");  // no biases: no loop
  for (const Op& op : lower_iteration(qwen, qwen_plan()).layer.forward) CHECK(std::string(op.name) != "expert_bias_add");
}

TEST_CASE("a clamped GLU: Megatron-Core's eager clamp and torch.cat around the experts' activation, recomputed with moe_act") {
  const ModelSpec m = resolve_model("gpt-oss-120b");  // swiglu_limit 7, expert width 2880, top 4
  REQUIRE(m.glu_clamp == 7.0);
  ParallelPlan p;
  p.dp = 8;
  p.ep = 8;
  p.global_batch = 8;
  REQUIRE(eager_glu_clamp(m, p));
  const LayerWork w = lower_iteration(m, p).layer;
  const double inner = 4096.0 * 4 * 2880 * 2;  // the activation's output: this rank's copies x the expert width, bf16
  // The compiled activation (read both halves, write one: 3) plus the clamps and the cat (8).
  const Op& forward = find_op(w.forward, "swiglu_clamped");
  CHECK(forward.bytes == Approx(11 * inner));
  CHECK(forward.eager_ops == 5);
  CHECK(forward.host_sync);  // the linear offset's torch.tensor on the device: a blocking copy
  // Its backward (5) plus ClampBackward on each half (4 and 7) and chunk's backward (4).
  const Op& backward = find_op(w.backward, "swiglu_clamped_bwd");
  CHECK(backward.bytes == Approx(20 * inner));
  CHECK(backward.eager_ops == 4);
  CHECK(backward.backward);
  CHECK(op_category_of(forward.name) == OpCategory::kActivation);
  CHECK(op_category_of(backward.name) == OpCategory::kActivation);
  // Recomputing moe_act runs the clamp again with the activation.
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeMoeAct;
  const LayerWork rerun = lower_iteration(m, p).layer;
  REQUIRE(rerun.recompute.size() == 1);
  CHECK(std::string(rerun.recompute[0].name) == "swiglu_clamped");
  CHECK(rerun.recompute[0].bytes == Approx(11 * inner));
  // Transformer Engine's op fuser clamps inside its fused kernel; another stack's experts are not
  // Megatron-Core's: the activation as an unclamped one.
  for (auto change : {+[](ParallelPlan& q) { q.te_op_fuser = true; }, +[](ParallelPlan& q) { q.host_stack = HostStack::kPytorch; }}) {
    ParallelPlan q = p;
    change(q);
    CHECK_FALSE(eager_glu_clamp(m, q));
    CHECK(find_op(lower_iteration(m, q).layer.forward, "swiglu").bytes == Approx(3 * inner));
  }
  ModelSpec unclamped = m;
  unclamped.glu_clamp = 0;
  CHECK_FALSE(eager_glu_clamp(unclamped, p));
  CHECK(find_op(lower_iteration(unclamped, p).layer.backward, "swiglu_bwd").bytes == Approx(5 * inner));
}

TEST_CASE("the dispatcher takes the token counts to the host before it exchanges the copies: a host synchronisation there") {
  for (const MoeDispatcher d : {MoeDispatcher::kAllToAll, MoeDispatcher::kFlex, MoeDispatcher::kAllGather}) {
    ParallelPlan p = qwen_plan();
    p.moe_dispatcher = d;
    const std::vector<Op> forward = lower_iteration(resolve_model("qwen3-30b-a3b"), p).layer.forward;
    int syncs = 0;
    for (size_t i = 0; i < forward.size(); ++i) {
      if (!forward[i].host_sync) continue;
      ++syncs;
      REQUIRE(i > 0);
      CHECK(std::string(forward[i - 1].name) == "moe_permute");
      CHECK(std::string(forward[i].name) == "moe_dispatch");
    }
    CHECK(syncs == 1);
    for (const Op& op : lower_iteration(resolve_model("qwen3-30b-a3b"), p).layer.backward) CHECK_FALSE(op.host_sync);
  }
  // Without EP the experts' first GEMM waits for the counts.
  ParallelPlan single;
  single.global_batch = 1;
  const std::vector<Op> forward = lower_iteration(resolve_model("qwen3-30b-a3b"), single).layer.forward;
  for (size_t i = 0; i + 1 < forward.size(); ++i) {
    if (std::string(forward[i].name) == "moe_permute") CHECK(forward[i + 1].host_sync);
  }
}

TEST_CASE("a clamped GLU's eager clamp keeps its clamped copy of fc1's output for the backward, unless moe_act is recomputed") {
  const ModelSpec m = resolve_model("gpt-oss-120b");
  ParallelPlan p;
  p.dp = 8;
  p.ep = 8;
  p.global_batch = 8;
  ModelSpec unclamped = m;
  unclamped.glu_clamp = 0;
  const double extra = estimate_rank_memory(m, p).stages[0].memory.activations_bytes -
                       estimate_rank_memory(unclamped, p).stages[0].memory.activations_bytes;
  // 36 layers, one micro-batch in flight: 4096 tokens x 4 copies x 2 x 2880 values in bf16 each.
  CHECK(extra == Approx(36 * 4096.0 * 4 * 2 * 2880 * 2));
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeMoeAct;
  CHECK(estimate_rank_memory(m, p).stages[0].memory.activations_bytes ==
        Approx(estimate_rank_memory(unclamped, p).stages[0].memory.activations_bytes));
}

TEST_CASE("router imbalance: the busiest EP rank runs and receives imbalance x the mean copies, capped by the capacity factor") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = qwen_plan();
  p.moe_imbalance = 1.5;
  const LayerWork w = lower_iteration(m, p).layer;
  const double copy_bytes = 4096.0 * 8 * 2048 * 2.0;
  CHECK(find_op(w.forward, "moe_dispatch").bytes == Approx(1.5 * copy_bytes));
  CHECK(find_op(w.backward, "moe_combine_bwd").bytes == Approx(1.5 * copy_bytes));
  CHECK(find_op(w.forward, "fc1").m == 6144);  // 1.5 x 4096 copies per local expert
  CHECK(find_op(w.forward, "moe_permute").bytes == Approx(2 * copy_bytes));  // a rank permutes what it sends
  p.moe_capacity_factor = 1.25;  // copies beyond 1.25 x the mean are dropped
  CHECK(find_op(lower_iteration(m, p).layer.forward, "fc1").m == 5120);
  p.moe_imbalance = 1.0;
  p.moe_capacity_factor = 0.5;  // under 1: half the copies dropped even when balanced
  CHECK(find_op(lower_iteration(m, p).layer.forward, "fc1").m == 2048);
  // Without EP every rank runs every expert's TP slice: imbalance moves no work between ranks.
  ParallelPlan no_ep = qwen_plan();
  no_ep.ep = 1;
  const int64_t balanced = find_op(lower_iteration(m, no_ep).layer.forward, "fc1").m;
  no_ep.moe_imbalance = 2.0;
  CHECK(find_op(lower_iteration(m, no_ep).layer.forward, "fc1").m == balanced);
  // What the plan may say: at least 1, finite, and only for an MoE model.
  p.moe_imbalance = 0.5;
  CHECK_THAT(validate_plan(p, m, "options").items()[0], Catch::Contains("moe_imbalance (0.5) must be between 1"));
  p.moe_imbalance = 2.0;
  CHECK_THAT(validate_plan(p, resolve_model("llama3-8b"), "options").items()[0], Catch::Contains("there are no experts"));
}

TEST_CASE("router imbalance: the busiest EP rank also keeps imbalance x the mean routed activations") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  REQUIRE(m.moe->expert_ffn_hidden == 768);
  REQUIRE(m.moe->shared_experts == 0);
  ParallelPlan p = qwen_plan();
  const double balanced = estimate_rank_memory(m, p).stages[0].memory.activations_bytes;
  p.moe_imbalance = 1.5;
  const double busiest = estimate_rank_memory(m, p).stages[0].memory.activations_bytes;
  // Per layer, 0.5 x 8 more copies of 4096 tokens, each with SwiGLU's 3 x 768 values and its
  // FFN input (2048), in bf16; one micro-batch in flight, 48 layers.
  const double per_layer = 0.5 * 8 * 4096 * 2.0 * (3 * 768 + 2048);
  CHECK(busiest - balanced == Approx(48 * per_layer));
  // A capacity factor under the imbalance caps what the rank keeps, as it caps what it runs.
  p.moe_capacity_factor = 1.25;
  CHECK(estimate_rank_memory(m, p).stages[0].memory.activations_bytes - balanced == Approx(48 * per_layer / 2));
}

TEST_CASE("an MoE layer's memory per rank: experts / ep whole experts, their optimizer states over the expert-DP ranks") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = qwen_plan();
  p.tp = 2;
  p.dp = 16;
  p.ep = 8;
  p.sequence_parallel = true;
  p.global_batch = 64;
  REQUIRE(validate_plan(p, m, "options").empty());
  const ParamCounts c = count_params(m);
  const StageMemory s = estimate_rank_memory(m, p).stages[0];
  const int64_t experts_per_layer = c.per_layer.mlp / 8;  // 16 of 128 experts, not split over TP
  const int64_t dense_per_layer = c.per_layer.attention / 2 + c.per_layer.norms + c.per_layer.router;
  CHECK(s.expert_params == 48 * experts_per_layer);
  CHECK(s.params == 48 * (experts_per_layer + dense_per_layer) + c.token_embedding / 2 + c.final_norm + c.lm_head / 2);
  CHECK(expert_dp(p) == 4);  // tp x dp / ep = 32 / 8 ranks hold the same experts
  const double dense = static_cast<double>(s.params - s.expert_params), experts = static_cast<double>(s.expert_params);
  CHECK(s.memory.optimizer_bytes == Approx(12.0 * dense / 16.0 + 12.0 * experts / 4.0));
  CHECK(s.memory.weights_bytes == Approx(2.0 * (dense + experts)));
  // The expert-parallel group is 8 consecutive ranks: inside one node.
  CHECK(group_scope(p, GroupKind::kEp, 8).intra_node());
  CHECK(group_scope(p, GroupKind::kExpertDp, 8).nodes == 4);
}

TEST_CASE("Qwen MoE Hugging Face configs: Qwen3's routed experts, Qwen2-MoE's shared expert") {
  const std::string data = TRAINSIM_TEST_DATA;
  const ModelSpec q3 = resolve_model(data + "/hf/qwen3-30b-a3b/config.json");
  REQUIRE(q3.moe);
  CHECK(q3.moe->experts == 128);
  CHECK(q3.moe->expert_ffn_hidden == 768);
  CHECK(count_params(q3).total == count_params(resolve_model("qwen3-30b-a3b")).total);
  CHECK(count_params(q3).active_per_token == Approx(3.35e9).epsilon(0.01));  // "30.5B total, 3.3B activated"
  const ModelSpec q2 = resolve_model(data + "/hf/qwen1.5-moe-a2.7b/config.json");
  CHECK(q2.moe->shared_experts == 4);  // 5632 / 1408
  CHECK(count_params(q2).total == Approx(14.3e9).epsilon(0.01));            // "14.3B parameters"
  CHECK(count_params(q2).active_per_token == Approx(2.7e9).epsilon(0.01));  // "2.7B activated"
}
