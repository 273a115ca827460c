// torchtitan job TOML: export -> parse back -> the same plan; what torchtitan cannot run is refused.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "interop/torchtitan_export.hpp"
#include "model/model_catalog.hpp"
#include "plan/plan_json.hpp"
#include "plan/recompute_span.hpp"

using namespace trainsim;

namespace {

// What torchtitan runs: FSDP (or DDP alone), SequenceParallel with TP, SDPA, PyTorch's loss.
ParallelPlan titan_plan(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int zero) {
  ParallelPlan p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.zero_stage = zero;
  p.sequence_parallel = tp > 1;
  p.cross_entropy = LossKernel::kPytorch;
  p.micro_batch = 2;
  p.global_batch = dp * 2;
  return p;
}

void check_round_trip(const ModelSpec& m, const ParallelPlan& p) {
  const std::string toml = export_plan(&m, p, 8, ExportTarget::kTorchtitan);
  INFO(toml);
  const ParallelPlan back = parse_torchtitan_toml(toml, m, p.gpus());
  ParallelPlan expected = p;
  expected.host_stack = HostStack::kPytorch;  // torchtitan's modules are PyTorch's
  CHECK(plan_to_json(back).dump() == plan_to_json(expected).dump());
  CHECK(plan_to_json(parse_torchtitan_toml(toml, m, 0)).dump() == plan_to_json(expected).dump());  // the degrees give the world size
}

}  // namespace

TEST_CASE("torchtitan's layer split takes the embedding and output weights off the end stages") {
  // torchtitan/distributed/pipeline_parallel.py, generate_llm_fqn_per_model_part(2, 3, 2, 2)'s
  // docstring example: 3 layers + 4 weights over 2 stages (4 and 3 effective layers).
  CHECK(torchtitan_stage_layers(3, 2, 2, 2) == std::vector<int64_t>{2, 1});
  CHECK(torchtitan_stage_layers(80, 4, 1, 1) == std::vector<int64_t>{20, 21, 20, 19});  // the defaults: uneven
  CHECK(torchtitan_stage_layers(80, 4, 0, 0) == std::vector<int64_t>{20, 20, 20, 20});
  CHECK(torchtitan_stage_layers(4, 8, 0, 0).empty());  // a stage without layers
}

TEST_CASE("a torchtitan job reads back to the same plan: FSDP + TP, compiled, per-op checkpointing") {
  const ModelSpec m = resolve_model("llama3-70b");
  ParallelPlan p = titan_plan(8, 8, 1, 1, 3);
  p.recompute = Recompute::kSelectiveOp;
  p.global_batch = 8 * 2 * 4;  // 4 gradient accumulation steps
  REQUIRE(validate_plan(p, m, "test").empty());
  const std::string toml = export_plan(&m, p, 8, ExportTarget::kTorchtitan);
  for (const char* expected : {"flavor = \"70B\"", "data_parallel_shard_degree = 8", "data_parallel_replicate_degree = 1",
                               "tensor_parallel_degree = 8", "local_batch_size = 2", "global_batch_size = 64",
                               "selective_ac_option = \"op\"", "[compile]\nenable = true", "seq_len = 8192"}) {
    CHECK_THAT(toml, Catch::Contains(expected));
  }
  check_round_trip(m, p);
  // A compiled loss is the "loss" compile component (torchtitan#1033); without it only the model.
  CHECK_THAT(toml, Catch::Contains("components = [\"model\"]"));
  p.cross_entropy = LossKernel::kCompiled;
  CHECK_THAT(export_plan(&m, p, 8, ExportTarget::kTorchtitan), Catch::Contains("components = [\"model\", \"loss\"]"));
  check_round_trip(m, p);
}

TEST_CASE("a torchtitan job reads back to the same plan: FSDP + TP + interleaved pipeline") {
  ModelSpec m = resolve_model("llama3-70b");
  ParallelPlan p = titan_plan(4, 8, 4, 1, 3);
  p.vpp = 5;  // 20 virtual stages of 4 layers
  p.schedule = Schedule::kInterleaved;
  p.micro_batch = 1;
  p.global_batch = 4 * 16;
  p.recompute = Recompute::kFull;
  const std::string toml = export_plan(&m, p, 8, ExportTarget::kTorchtitan);
  for (const char* expected : {"pipeline_parallel_schedule = \"Interleaved1F1B\"", "pipeline_parallel_layers_per_stage = 4",
                               "pipeline_parallel_first_stage_less_layers = 0", "pipeline_parallel_microbatch_size = 1",
                               "local_batch_size = 16"}) {
    CHECK_THAT(toml, Catch::Contains(expected));
  }
  check_round_trip(m, p);

  m.layers = 126;  // Llama 3.1 405B's depth on 8 x 8 virtual stages: the embedding and loss count as layers
  p.pp = 8;
  p.vpp = 8;
  p.global_batch = 4 * 16;
  CHECK_THAT(export_plan(&m, p, 8, ExportTarget::kTorchtitan), Catch::Contains("pipeline_parallel_first_stage_less_layers = 1"));
  check_round_trip(m, p);
}

TEST_CASE("a torchtitan job reads back to the same plan: ZB-V, two stages per rank in a V") {
  ModelSpec m = resolve_model("llama3-70b");
  ParallelPlan p = titan_plan(2, 8, 4, 1, 3);
  p.schedule = Schedule::kZeroBubbleV;
  p.vpp = 2;  // 8 virtual stages of 10 layers, rank 0 holding the first and the last
  p.micro_batch = 1;
  p.global_batch = 2 * 16;
  REQUIRE(validate_plan(p, m, "test").empty());
  const std::string toml = export_plan(&m, p, 8, ExportTarget::kTorchtitan);
  CHECK_THAT(toml, Catch::Contains("pipeline_parallel_schedule = \"ZBVZeroBubble\""));
  CHECK_THAT(toml, Catch::Contains("pipeline_parallel_first_stage_less_layers = 0"));
  check_round_trip(m, p);

  m.layers = 126;  // 128 weighted layers over 16 virtual stages: the embedding's and the loss's both on rank 0
  p.pp = 8;
  REQUIRE(validate_plan(p, m, "test").empty());
  CHECK_THAT(export_plan(&m, p, 8, ExportTarget::kTorchtitan), Catch::Contains("pipeline_parallel_last_stage_less_layers = 1"));
  check_round_trip(m, p);
  CHECK(layers_on_stage(m, p, 0) == 14);  // 7 + 7 beside the embedding and the head
  CHECK(layers_on_stage(m, p, 1) == 16);
}

TEST_CASE("a torchtitan job reads back to the same plan: explicit first-stage layers, 1F1B and GPipe") {
  const ModelSpec m = resolve_model("llama3-70b");
  ParallelPlan p = titan_plan(1, 8, 6, 1, 0);
  p.first_stage_layers = 10;  // 70 left over 5 stages
  p.global_batch = 12;
  p.micro_batch = 1;
  CHECK_THAT(export_plan(&m, p, 8, ExportTarget::kTorchtitan), Catch::Contains("pipeline_parallel_first_stage_less_layers = 4"));
  check_round_trip(m, p);
  p.first_stage_layers = 0;
  p.pp = 4;
  p.schedule = Schedule::kGpipe;
  check_round_trip(m, p);
}

TEST_CASE("a torchtitan job reads back to the same plan: context parallelism with fp8, and DDP") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan cp = titan_plan(2, 2, 1, 2, 3);
  cp.precision = Precision::kFp8;
  cp.torchao_float8 = true;  // torchtitan's float8 converter: torchao's Float8Linear (the import says so)
  CHECK_THAT(export_plan(&m, cp, 8, ExportTarget::kTorchtitan), Catch::Contains("converters = [\"quantize.linear.float8\"]"));
  check_round_trip(m, cp);
  cp.fp8_recipe = Fp8Recipe::kRowwise;  // torchao's row-wise recipe
  CHECK_THAT(export_plan(&m, cp, 8, ExportTarget::kTorchtitan), Catch::Contains("recipe_name = \"rowwise\""));
  CHECK_THROWS_WITH(export_plan(&m, cp, 8, ExportTarget::kMegatron), Catch::Contains("no row-wise FP8 scaling"));
  check_round_trip(m, cp);

  ParallelPlan ddp = titan_plan(8, 1, 1, 1, 0);
  ddp.precision = Precision::kFp32;
  ddp.norm = NormKernel::kEager;  // an uncompiled run
  const std::string toml = export_plan(&m, ddp, 8, ExportTarget::kTorchtitan);
  CHECK_THAT(toml, Catch::Contains("data_parallel_replicate_degree = 8"));
  CHECK_THAT(toml, Catch::Contains("mixed_precision_param = \"float32\""));
  CHECK_THAT(toml, Catch::Contains("[compile]\nenable = false"));
  check_round_trip(m, ddp);

  ParallelPlan hsdp = titan_plan(16, 1, 1, 2, 3);  // shard over 8 of the 32 dp x cp ranks, 4 replicas
  hsdp.dp_shard = 8;
  const std::string hsdp_toml = export_plan(&m, hsdp, 8, ExportTarget::kTorchtitan);
  CHECK_THAT(hsdp_toml, Catch::Contains("data_parallel_replicate_degree = 4\ndata_parallel_shard_degree = 4"));
  check_round_trip(m, hsdp);
}

TEST_CASE("export --to torchtitan refuses what torchtitan cannot run, every setting at once") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p = titan_plan(4, 2, 1, 1, 1);
  p.recompute = Recompute::kSelective;
  p.sequence_parallel = false;
  try {
    export_plan(&m, p, 8, ExportTarget::kTorchtitan);
    FAIL("no InputError");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 3);
    CHECK_THAT(e.problems()[0], Catch::Contains("zero_stage 1: torchtitan has no ZeRO-1"));
    CHECK_THAT(e.problems()[1], Catch::Contains("recompute selective (Megatron's attention core)"));
    CHECK_THAT(e.problems()[2], Catch::Contains("tp 2 without sequence parallelism"));
  }
  CHECK_THROWS_WITH(export_plan(nullptr, titan_plan(8, 1, 1, 1, 3), 8, ExportTarget::kTorchtitan), Catch::Contains("needs the model"));
  ParallelPlan ddp_tp = titan_plan(4, 2, 1, 1, 0);
  CHECK_THROWS_WITH(export_plan(&m, ddp_tp, 8, ExportTarget::kTorchtitan), Catch::Contains("DDP runs only alone"));
  ParallelPlan block = titan_plan(8, 1, 1, 1, 3);
  block.recompute = Recompute::kFull;
  block.recompute_method = RecomputeMethod::kBlock;
  block.recompute_layers = 4;
  CHECK_THROWS_WITH(export_plan(&m, block, 8, ExportTarget::kTorchtitan), Catch::Contains("recompute full with block 4"));
}

TEST_CASE("a model that is no Llama 3 flavor is exported with a comment asking for one") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p = titan_plan(8, 1, 1, 1, 3);
  const std::string toml = export_plan(&m, p, 8, ExportTarget::kTorchtitan);
  CHECK_THAT(toml, Catch::Contains("# flavor: must be set"));
  CHECK_THAT(toml, !Catch::Contains("flavor = "));
}

TEST_CASE("bad torchtitan files are InputErrors naming the file, the key and the value") {
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK_THROWS_WITH(import_torchtitan("[parallelism]\ntensor_parallel_degree = = 2\n", "job.toml", m, 8),
                    Catch::Contains("job.toml: malformed TOML at line 2"));
  CHECK_THROWS_WITH(import_torchtitan("[parallelism]\ntensor_parallel_degree = \"2\"\n", "job.toml", m, 8),
                    Catch::Contains("job.toml: parallelism.tensor_parallel_degree: expected an integer, got a string (\"2\")"));
  CHECK_THROWS_WITH(import_torchtitan("[activation_checkpoint]\nselective_ac_option = \"two\"\n", "job.toml", m, 8),
                    Catch::Contains("activation_checkpoint.selective_ac_option: \"two\" is neither \"op\" nor a layer frequency"));
  const std::string ac = "[activation_checkpoint]\nmode = \"none\"\n";
  CHECK_THROWS_WITH(import_torchtitan(ac + "[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"DualPipeV\"\n", "job.toml", m, 8),
                    Catch::Contains("\"DualPipeV\" is not modeled"));
  CHECK_THROWS_WITH(import_torchtitan(ac + "[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"ZBVZeroBubble\"\npipeline_parallel_layers_per_stage = 4\n", "job.toml", m, 8),
                    Catch::Contains("4 gives 9 virtual stages for pp 2 and schedule zb-v"));
  CHECK_THROWS_WITH(import_torchtitan(ac + "[model]\nname = \"llama3\"\nflavor = \"70B\"\n", "job.toml", m, 8),
                    Catch::Contains("model.flavor: \"70B\" is not model \"llama3-8b\""));
  CHECK_THROWS_WITH(import_torchtitan(ac, "job.toml", m, 0), Catch::Contains("needs the GPU count"));
}

TEST_CASE("torchtitan's layer-wise selective checkpointing (its default \"2\") reads as recompute full, every N-th layer, and round-trips") {
  const ModelSpec m = resolve_model("llama3-8b");
  // No [activation_checkpoint]: torchtitan's default checkpoints every 2nd block whole.
  const ParallelPlan p = import_torchtitan("[training]\nlocal_batch_size = 1\n", "job.toml", m, 8).plan;
  CHECK(p.recompute == Recompute::kFull);
  CHECK(p.recompute_method == RecomputeMethod::kEvery);
  CHECK(p.recompute_layers == 2);
  for (const char* every_layer : {"0", "1"}) {
    const ParallelPlan all = import_torchtitan(std::string("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"") +
                                                   every_layer + "\"\n", "job.toml", m, 8).plan;
    CHECK(all.recompute == Recompute::kFull);
    CHECK_FALSE(is_partial_recompute(all));
  }
  ParallelPlan every = titan_plan(8, 1, 1, 1, 3);
  every.recompute = Recompute::kFull;
  every.recompute_method = RecomputeMethod::kEvery;
  every.recompute_layers = 3;
  const std::string toml = export_plan(&m, every, 8, ExportTarget::kTorchtitan);
  CHECK_THAT(toml, Catch::Contains("mode = \"selective\"\nselective_ac_option = \"3\""));
  const ParallelPlan back = import_torchtitan(toml, "job.toml", m, 8).plan;
  CHECK(back.recompute_method == RecomputeMethod::kEvery);
  CHECK(back.recompute_layers == 3);
  CHECK_THROWS_WITH(export_plan(&m, every, 8, ExportTarget::kMegatron), Catch::Contains("Megatron-LM has no every-N-th-layer recomputation"));
}
