// Megatron-Core's selective recomputation by module (--recompute-modules): what each module
// re-runs before the backward, what it leaves out of the stored activations (by hand), its hardware
// FLOPs, Megatron-Core's checks, and the plan JSON / Megatron import / export round trip.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/activation_memory.hpp"
#include "model/flops.hpp"
#include "model/model_catalog.hpp"
#include "model/param_count.hpp"
#include "plan/lowering.hpp"
#include "plan/plan_json.hpp"

using namespace trainsim;

namespace {

// Qwen3-30B-A3B on 16 GPUs, ep 8, selective recomputation of `modules`.
ParallelPlan moe_plan(RecomputeModules modules) {
  ParallelPlan p;
  p.dp = 16;
  p.ep = 8;
  p.global_batch = 64;
  p.zero_stage = 1;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = modules;
  return p;
}

std::multiset<std::string> names(const std::vector<Op>& ops) {
  std::multiset<std::string> out;
  for (const Op& op : ops) out.insert(op.name);
  return out;
}

ActivationLayout selective(RecomputeModules modules) {
  ActivationLayout l;
  l.recompute = Recompute::kSelective;
  l.recompute_modules = modules;
  return l;
}

}  // namespace

TEST_CASE("each module re-runs its own ops: core_attn the attention, moe_act the experts' activation, moe the block") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const LayerWork attn = lower_iteration(m, moe_plan(kRecomputeCoreAttn)).layer;
  CHECK(names(attn.recompute) == std::multiset<std::string>{"attention"});
  const LayerWork act = lower_iteration(m, moe_plan(kRecomputeMoeAct | kRecomputeLayernorm)).layer;
  CHECK(names(act.recompute) == std::multiset<std::string>{"norm2", "swiglu"});
  const LayerWork block = lower_iteration(m, moe_plan(kRecomputeMoe)).layer;
  const std::multiset<std::string> rerun = names(block.recompute);
  for (const char* op : {"router", "router_topk", "moe_permute", "moe_dispatch", "fc1", "swiglu", "fc2", "moe_combine", "moe_unpermute"}) {
    CHECK(rerun.count(op) == 1);
  }
  CHECK(rerun.count("attention") == 0);
  CHECK(rerun.count("qkv") == 0);
  // The default is what selective recomputation always meant: the attention core.
  CHECK(names(lower_iteration(m, moe_plan(kDefaultRecomputeModules)).layer.recompute) == names(attn.recompute));

  // A dense model's mlp: its FFN with the TP boundaries, not the norm (fused into fc1 under TE).
  ParallelPlan dense;
  dense.dp = 8;
  dense.tp = 2;
  dense.sequence_parallel = true;
  dense.global_batch = 16;
  dense.recompute = Recompute::kSelective;
  dense.recompute_modules = kRecomputeMlp;
  const std::multiset<std::string> mlp = names(lower_iteration(resolve_model("llama3-8b"), dense).layer.recompute);
  CHECK(mlp.count("fc1") == 1);
  CHECK(mlp.count("swiglu") == 1);
  CHECK(mlp.count("fc2") == 1);
  CHECK(mlp.count("attention") == 0);
  CHECK(mlp.count("norm2") == 0);
}

TEST_CASE("what the modules leave out of a layer's activations, by hand") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");  // h 2048, top 8 of 128 experts, expert_ffn_hidden 768, no shared
  const double sb = 4096.0, h = 2048, f = 768, e = 2.0;
  const double base = activation_bytes_per_layer(m, selective(kRecomputeCoreAttn));
  CHECK(base == Approx(activation_bytes_per_layer(m, ActivationLayout{})));  // flash: the core keeps only its statistics either way
  CHECK(base - activation_bytes_per_layer(m, selective(kRecomputeCoreAttn | kRecomputeMoeAct)) == Approx(8 * sb * f * e));
  CHECK(base - activation_bytes_per_layer(m, selective(kRecomputeCoreAttn | kRecomputeLayernorm)) == Approx(sb * h * e));
  // moe keeps only the block's input: the copies' fc1 outputs and activations (3f each) and 7 of
  // the 8 copies of the input go.
  CHECK(base - activation_bytes_per_layer(m, selective(kRecomputeCoreAttn | kRecomputeMoe)) == Approx(8 * sb * e * 3 * f + 7 * sb * e * h));

  const ModelSpec dense = resolve_model("llama3-8b");  // h 4096, ffn 14336
  const double dense_base = activation_bytes_per_layer(dense, selective(kRecomputeCoreAttn));
  CHECK(dense_base - activation_bytes_per_layer(dense, selective(kRecomputeCoreAttn | kRecomputeMlp)) ==
        Approx(8192.0 * 4096 * e + 8192.0 * e * 3 * 14336));
  // The working memory of the backward is what the modules dropped, one layer at a time.
  CHECK(recompute_working_bytes(m, selective(kRecomputeMoeAct), 1) ==
        Approx(activation_bytes_per_layer(m, ActivationLayout{}) - activation_bytes_per_layer(m, selective(kRecomputeMoeAct))));
}

TEST_CASE("hardware FLOPs: mlp and moe re-run their matmuls, moe_act and layernorm none") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const ParamCounts c = count_params(m);
  const FlopsPerToken attn = flops_per_token(m, Recompute::kSelective, m.layers, kRecomputeCoreAttn);
  CHECK(attn.hardware == Approx(attn.model + attn.forward_attention));
  CHECK(flops_per_token(m, Recompute::kSelective, m.layers, kRecomputeCoreAttn | kRecomputeMoeAct | kRecomputeLayernorm).hardware == Approx(attn.hardware));
  const double moe_rerun = 2.0 * m.layers * (c.per_layer.mlp * 8.0 / 128.0 + c.per_layer.router);
  CHECK(flops_per_token(m, Recompute::kSelective, m.layers, kRecomputeMoe).hardware == Approx(attn.model + moe_rerun));
}

TEST_CASE("Megatron-Core's checks on recompute_modules") {
  const ModelSpec moe = resolve_model("qwen3-30b-a3b");
  const ModelSpec dense = resolve_model("llama3-8b");
  auto problems = [](const ParallelPlan& p, const ModelSpec& m) {
    const ProblemList list = validate_plan(p, m, "plan.json");
    return list.empty() ? std::string() : list.items().front();
  };
  CHECK(problems(moe_plan(kRecomputeCoreAttn | kRecomputeMoeAct), moe).empty());
  ParallelPlan full = moe_plan(kRecomputeMoeAct);
  full.recompute = Recompute::kFull;
  CHECK_THAT(problems(full, moe), Catch::Contains("recompute is full"));
  ParallelPlan dense_plan;
  dense_plan.dp = 8;
  dense_plan.global_batch = 8;
  dense_plan.recompute = Recompute::kSelective;
  dense_plan.recompute_modules = kRecomputeMoeAct;
  CHECK_THAT(problems(dense_plan, dense), Catch::Contains("need experts"));
  CHECK_THAT(problems(moe_plan(kRecomputeMlp), moe), Catch::Contains("every layer is MoE"));
  CHECK_THAT(problems(moe_plan(kRecomputeSharedExperts), moe), Catch::Contains("no shared experts"));
  ParallelPlan overlap = moe_plan(kRecomputeMoe);
  overlap.ep_comm_overlap = true;
  CHECK_THAT(problems(overlap, moe), Catch::Contains("EP communication overlap"));
}

TEST_CASE("recompute_modules in plan JSON, Megatron arguments and back") {
  const ParallelPlan p = moe_plan(kRecomputeMoeAct | kRecomputeLayernorm);
  const nlohmann::ordered_json j = plan_to_json(p);
  CHECK(j["recompute_modules"] == nlohmann::json({"moe_act", "layernorm"}));
  CHECK(plan_to_json(moe_plan(kDefaultRecomputeModules)).count("recompute_modules") == 0);  // the default is not written
  ProblemList list;
  const nlohmann::json doc = nlohmann::json::parse(j.dump());
  JsonObjectReader reader(doc, "plan.json", "", list);
  CHECK(read_plan(reader, ParallelPlan{}, nullptr).recompute_modules == p.recompute_modules);
  CHECK(list.empty());

  const nlohmann::json bad = nlohmann::json::parse(R"({"recompute": "selective", "recompute_modules": ["moe_act", "mhc"]})");
  JsonObjectReader bad_reader(bad, "plan.json", "", list);
  read_plan(bad_reader, ParallelPlan{}, nullptr);
  REQUIRE(list.size() == 1);
  CHECK_THAT(list.items().front(), Catch::Contains("\"mhc\" is not a recompute module"));

  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--recompute-granularity selective --recompute-modules moe_act layernorm"));
  const ImportedJob job = import_megatron(args, "args.sh", m, 16);
  CHECK(job.plan.recompute == Recompute::kSelective);
  CHECK(job.plan.recompute_modules == (kRecomputeMoeAct | kRecomputeLayernorm));
  CHECK_THROWS_WITH(import_megatron("--recompute-granularity selective --recompute-modules core_attn mhc", "args.sh", m, 16),
                    Catch::Contains("args.sh: --recompute-modules: \"mhc\" is not a recompute module"));
}
