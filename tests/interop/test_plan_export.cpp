// Exports round-trip: export -> parse back -> the same plan.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/plan_json.hpp"

using namespace trainsim;

namespace {
ParallelPlan plan(int64_t dp, int64_t tp, int64_t pp, int64_t vpp, int zero, Recompute r, bool sp, Precision precision) {
  ParallelPlan p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.vpp = vpp;
  p.schedule = vpp > 1 ? Schedule::kInterleaved : Schedule::k1F1B;
  p.micro_batch = 2;
  p.global_batch = dp * 2 * 8;
  p.zero_stage = zero;
  p.recompute = r;
  p.sequence_parallel = sp;
  p.precision = precision;
  return p;
}
}  // namespace

TEST_CASE("Megatron-LM arguments read back to the same plan") {
  const ModelSpec m = resolve_model("llama3-70b");
  for (const ParallelPlan& p : {plan(8, 8, 4, 5, 1, Recompute::kSelective, true, Precision::kBf16),
                                plan(64, 4, 1, 1, 3, Recompute::kFull, false, Precision::kFp8),
                                plan(2, 1, 8, 1, 0, Recompute::kNone, false, Precision::kFp16)}) {
    REQUIRE(validate_plan(p, m, "test").empty());
    const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
    const ParallelPlan back = parse_megatron_args(args, m, p.gpus());
    CHECK(plan_to_json(back).dump() == plan_to_json(p).dump());
  }
}

TEST_CASE("partial full recomputation exports as --recompute-method / --recompute-num-layers and reads back") {
  const ModelSpec m = resolve_model("llama3-70b");
  for (const auto& [method, n] : {std::pair<RecomputeMethod, int64_t>{RecomputeMethod::kBlock, 0}, {RecomputeMethod::kBlock, 3},
                                  {RecomputeMethod::kUniform, 2}, {RecomputeMethod::kUniform, 1}}) {
    ParallelPlan p = plan(8, 8, 4, 5, 1, Recompute::kFull, true, Precision::kBf16);
    p.recompute_method = method;
    p.recompute_layers = n;
    REQUIRE(validate_plan(p, m, "test").empty());
    const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
    CHECK_THAT(args, Catch::Contains(std::string("--recompute-granularity full --recompute-method ") + to_string(method) +
                                     " --recompute-num-layers " + std::to_string(n)));
    const ParallelPlan back = parse_megatron_args(args, m, p.gpus());
    CHECK(plan_to_json(back).dump() == plan_to_json(p).dump());
    const nlohmann::json j = nlohmann::json::parse(plan_to_json(p).dump());  // and through plan JSON
    CHECK(j.contains("recompute_method") == (method == RecomputeMethod::kBlock || n != 1));
  }
  ParallelPlan block = plan(16, 1, 1, 1, 1, Recompute::kFull, false, Precision::kBf16);
  block.recompute_method = RecomputeMethod::kBlock;
  block.recompute_layers = 2;
  CHECK_THROWS_WITH(export_plan(&m, block, 8, ExportTarget::kDeepSpeed), Catch::Contains("cannot say which layers are recomputed"));
}

TEST_CASE("Megatron-LM arguments carry the model and the knobs users expect") {
  const ModelSpec m = resolve_model("llama3-70b");
  const std::string args = export_plan(&m, plan(8, 8, 4, 5, 1, Recompute::kSelective, true, Precision::kBf16), 8,
                                       ExportTarget::kMegatron);
  for (const char* expected : {"--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 4",
                               "--num-layers-per-virtual-pipeline-stage 4", "--sequence-parallel",
                               "--recompute-granularity selective", "--micro-batch-size 2", "--global-batch-size 128",
                               "--use-distributed-optimizer", "--group-query-attention --num-query-groups 8", "--swiglu"}) {
    CHECK_THAT(args, Catch::Contains(expected));
  }
}

TEST_CASE("a DeepSpeed config reads back to the same data-parallel plan") {
  const ParallelPlan p = plan(16, 1, 1, 1, 2, Recompute::kNone, false, Precision::kBf16);
  const std::string config = export_plan(nullptr, p, 8, ExportTarget::kDeepSpeed);
  const nlohmann::json j = nlohmann::json::parse(config);
  CHECK(j["train_micro_batch_size_per_gpu"] == 2);
  CHECK(j["gradient_accumulation_steps"] == 8);
  CHECK(j["zero_optimization"]["stage"] == 2);
  // It reads back as the same plan run by DeepSpeed's ZeRO (its gradient buckets in memory).
  ParallelPlan deepspeed = p;
  deepspeed.zero_engine = ZeroEngine::kDeepSpeed;
  deepspeed.host_stack = HostStack::kPytorch;  // a DeepSpeed model's modules are PyTorch's
  CHECK(plan_to_json(parse_deepspeed_config(config, 16)).dump() == plan_to_json(deepspeed).dump());
}

TEST_CASE("a DeepSpeed config configures checkpointing but cannot turn it on: its recomputation reads back as none, said") {
  ParallelPlan p = plan(16, 1, 1, 1, 2, Recompute::kFull, false, Precision::kBf16);
  const std::string config = export_plan(nullptr, p, 8, ExportTarget::kDeepSpeed);
  CHECK(nlohmann::json::parse(config).contains("activation_checkpointing"));
  const ImportedJob back = import_deepspeed(config, "ds.json", 16);
  CHECK(back.plan.recompute == Recompute::kNone);
  REQUIRE(back.notes.size() == 1);
  CHECK_THAT(back.notes[0], Catch::Contains("does not turn it on") && Catch::Contains("add --recompute full"));
  p.recompute = Recompute::kNone;  // all else reads back, as DeepSpeed's ZeRO
  p.zero_engine = ZeroEngine::kDeepSpeed;
  p.host_stack = HostStack::kPytorch;
  CHECK(plan_to_json(back.plan).dump() == plan_to_json(p).dump());
}

TEST_CASE("a target that cannot express a plan says so") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  CHECK_THROWS_AS(export_plan(&m, plan(4, 2, 1, 1, 0, Recompute::kNone, false, Precision::kBf16), 8, ExportTarget::kDeepSpeed),
                  InputError);
  CHECK_THROWS_WITH(export_plan(&m, plan(8, 1, 1, 1, 2, Recompute::kNone, false, Precision::kBf16), 8, ExportTarget::kMegatron),
                    Catch::Contains("no ZeRO-2"));
}

TEST_CASE("torchrun and srun lines name the node count") {
  const ModelSpec m = resolve_model("llama3-70b");
  const std::string line = export_plan(&m, plan(8, 8, 4, 1, 1, Recompute::kNone, false, Precision::kBf16),
                                       8, ExportTarget::kTorchrun);
  CHECK_THAT(line, Catch::Contains("torchrun --nnodes 32 --nproc-per-node 8"));
  CHECK_THAT(line, Catch::Contains("srun --nodes 32 --ntasks-per-node 8"));
}

TEST_CASE("without a model only the parallelism is exported, and interleaving needs the model") {
  const std::string args = export_plan(nullptr, plan(8, 8, 4, 1, 1, Recompute::kNone, false, Precision::kBf16), 8,
                                       ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("\n--tensor-model-parallel-size 8"));
  CHECK_THAT(args, Catch::Contains("# Without --model: add the model's arguments"));
  CHECK_THROWS_WITH(export_plan(nullptr, plan(8, 8, 4, 5, 1, Recompute::kNone, false, Precision::kBf16), 8,
                                ExportTarget::kMegatron),
                    Catch::Contains("layers per virtual stage"));
}

TEST_CASE("uneven pipelines export as Megatron-Core writes them and read back") {
  ModelSpec m = resolve_model("llama3-70b");  // 80 layers
  ParallelPlan explicit_ends = plan(2, 8, 6, 1, 1, Recompute::kNone, true, Precision::kBf16);
  explicit_ends.first_stage_layers = 10;  // 70 left over 5 stages: 14 each
  explicit_ends.cp = 2;
  explicit_ends.global_batch = 64;
  REQUIRE(validate_plan(explicit_ends, m, "test").empty());
  std::string args = export_plan(&m, explicit_ends, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--decoder-first-pipeline-num-layers 10"));
  CHECK_THAT(args, Catch::Contains("--context-parallel-size 2"));
  CHECK(plan_to_json(parse_megatron_args(args, m, explicit_ends.gpus())).dump() == plan_to_json(explicit_ends).dump());

  m.layers = 126;  // the embedding and the loss count as layers: 128 on 8 x 8 virtual stages
  const ParallelPlan accounted = plan(2, 8, 8, 8, 1, Recompute::kNone, true, Precision::kBf16);
  REQUIRE(validate_plan(accounted, m, "test").empty());
  args = export_plan(&m, accounted, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"));
  CHECK_THAT(args, Catch::Contains("--num-virtual-stages-per-pipeline-rank 8"));
  CHECK(plan_to_json(parse_megatron_args(args, m, accounted.gpus())).dump() == plan_to_json(accounted).dump());

  m.layers = 125;  // neither 125 nor 127 splits over 8 stages
  CHECK_THROWS_WITH(export_plan(&m, plan(2, 8, 8, 1, 1, Recompute::kNone, true, Precision::kBf16), 8, ExportTarget::kMegatron),
                    Catch::Contains("divides neither the layers (125)"));
}

TEST_CASE("an MoE plan exports its experts and expert parallelism for Megatron-Core and reads back") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  ParallelPlan p = plan(16, 1, 1, 1, 1, Recompute::kNone, false, Precision::kBf16);
  p.ep = 16;
  p.attention = AttentionKernel::kFlash;
  p.moe_capacity_factor = 1.25;
  REQUIRE(validate_plan(p, m, "test").empty());
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  for (const char* expected : {"--num-experts 128", "--moe-router-topk 8", "--moe-ffn-hidden-size 768", "--moe-grouped-gemm",
                               "--expert-model-parallel-size 16 --expert-tensor-parallel-size 1",
                               "--moe-expert-capacity-factor 1.25"}) {
    CHECK_THAT(args, Catch::Contains(expected));
  }
  CHECK(plan_to_json(parse_megatron_args(args, m, p.gpus())).dump() == plan_to_json(p).dump());
}

TEST_CASE("the CP communication type exports as --cp-comm-type and reads back") {
  const ModelSpec m = resolve_model("llama3-70b");
  ParallelPlan p = plan(2, 8, 4, 1, 1, Recompute::kNone, true, Precision::kBf16);
  p.cp = 2;
  p.cp_comm = CpComm::kAllGather;
  p.global_batch = 32;
  p.attention = AttentionKernel::kFlash;
  REQUIRE(validate_plan(p, m, "test").empty());
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--cp-comm-type all_gather"));
  CHECK(plan_to_json(parse_megatron_args(args, m, p.gpus())).dump() == plan_to_json(p).dump());
}
