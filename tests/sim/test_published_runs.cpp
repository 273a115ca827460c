// Reading published-run files (versions 1 and 2): framework defaults for null fields, runs the
// simulator cannot simulate kept with their reason, malformed files refused; device memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/errors.hpp"
#include "plan/framework_preset.hpp"
#include "sim/device_memory.hpp"
#include "sim/published_runs.hpp"
#include "sim/validation.hpp"
#include "sim/validation_fit.hpp"

using namespace trainsim;

namespace {

// One run in a version-2 file; `plan`, `measured` and `model_extra` (more model members) are JSON
// members spliced in.
std::string write_runs(const std::string& name, const std::string& framework, const std::string& gpu, const std::string& plan,
                       const std::string& measured = R"("tokens_per_s_per_gpu": 1000)",
                       const std::string& options = R"("torch_compile", "distributed_optimizer", "float8_rowwise")",
                       const std::string& source = "a table", const std::string& model_extra = "") {
  const std::string path = (std::filesystem::temp_directory_path() / ("trainsim_" + name)).string();
  std::ofstream(path) << R"({"schema": "trainsim.published_runs", "schema_version": 2, "runs": [{
    "id": "r", "group": "g", "source": ")" << source << R"(", "framework": )" << framework << R"(, "options": [)" << options << R"(],
    "model": {"name": "m", "layers": 8, "hidden": 1024, "heads": 16, "kv_heads": 16, "ffn_hidden": null,
              "ffn_kind": null, "vocab": null, "seq_len": 2048, "params_b": null)" << model_extra << R"(},
    "hardware": {"gpu": ")" << gpu << R"(", "gpus": 8, "gpus_per_node": 8, "inter_node_gbps_per_gpu": null},
    "plan": {)" << plan << R"(}, "precision": null,
    "measured": {)" << measured << R"(}}]})";
  return path;
}

bool used(const PublishedRun& r, const std::string& entry) {
  return std::find(r.defaults_used.begin(), r.defaults_used.end(), entry) != r.defaults_used.end();
}

}  // namespace

TEST_CASE("null fields take the documented defaults of the run's framework, and each is recorded") {
  const auto runs = load_published_runs(write_runs("pr_defaults.json", "\"nemo\"", "h100-sxm-80gb",
      R"("dp": 4, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "vpp": null, "micro_batch": null, "global_batch": 64,
         "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)"));
  REQUIRE(runs.size() == 1);
  const PublishedRun& r = runs[0];
  CHECK(r.supported());
  CHECK(r.model.ffn_hidden == 4096);  // GELU, 4 x hidden
  CHECK(r.model.vocab == 50257);
  CHECK(r.inter_node_gbps_per_gpu == 400);  // DGX H100: NDR 400 Gb/s per GPU
  CHECK(r.plan.micro_batch == 1);
  CHECK(r.plan.zero_stage == 1);            // distributed optimizer (the option says so too)
  CHECK(r.plan.sequence_parallel);          // Megatron-Core recipes: SP with TP
  CHECK(used(r, "plan.zero_stage=1"));
  CHECK(used(r, "plan.sequence_parallel=true"));
  CHECK(used(r, "precision=bf16"));
  CHECK(r.options_not_modeled == std::vector<std::string>{"float8_rowwise"});
}

TEST_CASE("torchtitan runs without a pipeline take the local batch as one micro-batch") {
  const auto runs = load_published_runs(write_runs("pr_titan.json", "\"torchtitan\"", "a100-sxm-80gb",
      R"("dp": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "vpp": null, "micro_batch": null, "global_batch": 32,
         "zero_stage": null, "recompute": "full", "sequence_parallel": null, "schedule": null)"));
  CHECK(runs[0].plan.micro_batch == 4);
  CHECK(runs[0].plan.zero_stage == 1);  // the run's distributed_optimizer option wins over FSDP's 3
  CHECK_FALSE(runs[0].plan.sequence_parallel);
  CHECK(runs[0].inter_node_gbps_per_gpu == 200);  // DGX A100: HDR 200 Gb/s per GPU
}

TEST_CASE("torchtitan runs with a pipeline: pp micro-batches before 2025-04-07, one sequence each since") {
  const std::string plan = R"("dp": 2, "tp": 1, "pp": 4, "cp": 1, "ep": 1, "vpp": null, "micro_batch": null, "global_batch": 64,
      "zero_stage": null, "recompute": "full", "sequence_parallel": null, "schedule": "1f1b")";
  const auto dated = [&](const std::string& source) {
    return load_published_runs(write_runs("pr_titan_pp.json", "\"torchtitan\"", "h100-sxm-80gb", plan, R"("tokens_per_s_per_gpu": 1000)",
                                          R"("torch_compile")", source))[0];
  };
  // Local batch 32 in pp = 4 micro-batches of 8 (n_microbatches defaulted to the pipeline degree).
  const PublishedRun old_run = dated("benchmarks/llama3_h100_202412_torchtitan.md (torchtitan 9dec370)");
  CHECK(old_run.plan.micro_batch == 8);
  CHECK(used(old_run, "plan.micro_batch=8"));
  CHECK(dated("torch 1963fc8 2024-12-23, torchtitan 9dec370").plan.micro_batch == 8);
  CHECK(dated("a run of 2025-04-06").plan.micro_batch == 8);
  // Since PR #1073 (2025-04-07), micro-batch size 1; a source naming no date takes today's default.
  CHECK(dated("a run of 2025-04-07").plan.micro_batch == 1);
  CHECK(dated("benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md").plan.micro_batch == 1);
  CHECK(dated("no date here").plan.micro_batch == 1);
  // A digit run inside a commit hash is no date.
  CHECK(dated("pytorch/torchtitan@a202412b").plan.micro_batch == 1);
}

TEST_CASE("Megatron-DeepSpeed runs: unfused attention and the gradient all-reduce after the backward") {
  const auto runs = load_published_runs(write_runs("pr_mds.json", "\"megatron-deepspeed\"", "a100-sxm-80gb",
      R"("dp": 2, "tp": 4, "pp": 1, "global_batch": 16)"));
  CHECK(runs[0].plan.attention == AttentionKernel::kUnfused);
  CHECK_FALSE(runs[0].plan.dp_overlap);
  CHECK(used(runs[0], "plan.attention=unfused"));
  CHECK(used(runs[0], "plan.dp_overlap=false"));
  const auto nemo = load_published_runs(write_runs("pr_nemo_attn.json", "\"nemo\"", "a100-sxm-80gb",
      R"("dp": 2, "tp": 4, "pp": 1, "global_batch": 16)"));
  CHECK(nemo[0].plan.attention == AttentionKernel::kFlash);
  CHECK(nemo[0].plan.dp_overlap);
}

TEST_CASE("torchtitan runs: RMSNorm eager unless compiled (torch_compile, or async_tp which needs it)") {
  const char* plan = R"("dp": 8, "tp": 1, "pp": 1, "global_batch": 16, "recompute": "selective")";
  const auto eager = load_published_runs(write_runs("pr_titan_eager.json", "\"torchtitan\"", "h100-sxm-80gb", plan,
                                                    R"("tokens_per_s_per_gpu": 1000)", R"("selective_recompute_per_op")"));
  CHECK(eager[0].plan.norm == NormKernel::kEager);
  CHECK(eager[0].plan.recompute == Recompute::kSelectiveOp);
  CHECK(eager[0].plan.cross_entropy == LossKernel::kPytorch);
  CHECK(used(eager[0], "plan.norm=eager"));
  for (const char* options : {R"("torch_compile")", R"("async_tp")"}) {
    const auto compiled = load_published_runs(write_runs("pr_titan_compiled.json", "\"torchtitan\"", "h100-sxm-80gb", plan,
                                                         R"("tokens_per_s_per_gpu": 1000)", options));
    CHECK(compiled[0].plan.norm == NormKernel::kFused);
  }
}

TEST_CASE("an unknown framework takes the generic preset and says so") {
  CHECK_FALSE(framework_preset("colossalai").known);
  CHECK(framework_preset("megatron-core").known);
  const auto runs = load_published_runs(write_runs("pr_unknown.json", "\"colossalai\"", "a100-sxm-80gb",
      R"("dp": 8, "tp": 1, "pp": 1, "global_batch": 8)"));
  CHECK(used(runs[0], "framework colossalai: generic preset"));
}

TEST_CASE("runs the simulator cannot simulate are read and carry their reason") {
  SECTION("a GPU not in the catalog") {
    const auto runs = load_published_runs(write_runs("pr_gpu.json", "null", "mi300x", R"("dp": 8, "global_batch": 8)"));
    CHECK_THAT(runs[0].unsupported, Catch::Contains("not in the catalog"));
  }
  SECTION("Blackwell's block-scaled precisions, MXFP8 and NVFP4: simulated on Blackwell, refused with the reason on Hopper") {
    for (const auto& [precision, parsed] : {std::pair{std::string("mxfp8"), Precision::kMxfp8}, std::pair{std::string("nvfp4"), Precision::kNvfp4}}) {
      for (const std::string gpu : {"b200-sxm-180gb", "h100-sxm-80gb"}) {
        const std::string path = write_runs("pr_" + precision + gpu + ".json", "null", gpu, R"("dp": 8, "global_batch": 8)");
        std::stringstream text;
        text << std::ifstream(path).rdbuf();
        std::string json = text.str();
        json.replace(json.find("\"precision\": null"), 17, "\"precision\": \"" + precision + "\"");
        std::ofstream(path) << json;
        const auto runs = load_published_runs(path);
        CHECK(runs[0].plan.precision == parsed);
        if (gpu == "b200-sxm-180gb") CHECK(runs[0].supported());
        else CHECK(runs[0].unsupported == "precision " + precision + ": h100-sxm-80gb has no tensor cores for it");
      }
    }
  }
  SECTION("Zero Bubble's schedules, the V one with its two chunks per rank") {
    auto runs = load_published_runs(write_runs("pr_zb.json", "null", "a100-sxm-80gb",
        R"("dp": 2, "pp": 4, "tp": 1, "global_batch": 64, "schedule": "zb-v")"));
    CHECK(runs[0].unsupported.empty());
    CHECK(runs[0].plan.schedule == Schedule::kZeroBubbleV);
    CHECK(runs[0].plan.vpp == 2);
    runs = load_published_runs(write_runs("pr_zb2.json", "null", "a100-sxm-80gb",
        R"("dp": 1, "pp": 8, "tp": 1, "global_batch": 64, "schedule": "zb-2p")"));
    CHECK(runs[0].unsupported.empty());
    CHECK(runs[0].plan.schedule == Schedule::kZeroBubble2p);
  }
  SECTION("expert parallelism") {
    const auto runs = load_published_runs(write_runs("pr_ep.json", "null", "a100-sxm-80gb",
        R"("dp": 8, "ep": 2, "global_batch": 64)"));
    CHECK_THAT(runs[0].unsupported, Catch::Contains("expert parallelism"));
  }
  SECTION("a run that went out of memory needs no throughput") {
    const auto runs = load_published_runs(write_runs("pr_oom.json", "null", "a100-sxm-80gb", R"("dp": 8, "global_batch": 8)",
                                                     R"("tokens_per_s_per_gpu": null, "oom": true)"));
    CHECK(runs[0].measured_oom);
    CHECK(runs[0].supported());
  }
}

TEST_CASE("a malformed published-run file is refused whole with every problem named") {
  const std::string path = write_runs("pr_bad.json", "null", "a100-sxm-80gb", R"("dp": "eight", "global_batch": 8)",
                                      R"("tokens_per_s_per_gpu": null, "memory_kind": "smi")");
  try {
    load_published_runs(path);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string all = e.what();
    CHECK_THAT(all, Catch::Contains("/runs/0/plan/dp"));
    CHECK_THAT(all, Catch::Contains("tokens_per_s_per_gpu"));
    CHECK_THAT(all, Catch::Contains("memory_kind"));
  }
}

TEST_CASE("device memory adds the allocator's reserve, context, workspace and NCCL buffers to the allocated peak, per memory kind") {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  ParallelPlan plan;
  plan.dp = 4;
  plan.tp = 2;
  MemoryBreakdown tensors;
  tensors.weights_bytes = 10e9;
  tensors.optimizer_bytes = 10e9;
  tensors.activations_bytes = 15e9;
  tensors.other_bytes = 5e9;
  const DeviceMemory m = device_memory(tensors, plan, hw, 0.2);
  CHECK(m.of_kind("") == 40e9);
  CHECK(m.of_kind("reported_peak") == 40e9);
  // The reserve is a fraction of what a step allocates and frees (activations, other), not of the
  // states allocated once.
  CHECK(m.allocator_reserve_bytes == Approx(0.2 * 20e9));
  CHECK(m.of_kind("reserved_max") == Approx(44e9));
  CHECK(m.nccl_bytes == Approx(544e6 + 688e6));  // a 2-rank TP and a 4-rank DP communicator (nccl #964)
  CHECK(m.of_kind("nvidia_smi_max") == Approx(44e9 + 287047680.0 + 32.0 * 1024 * 1024 + 544e6 + 688e6));
  CHECK(counts_allocator_reserve("reserved_max"));
  CHECK(counts_allocator_reserve("nvidia_smi_max"));
  CHECK_FALSE(counts_allocator_reserve("reported_peak"));
  // Near the capacity the reserve takes only the room left: the allocator gives cached segments
  // back before it reports out of memory.
  tensors.optimizer_bytes = 50e9;  // 80e9 of tensors and 1.55e9 of CUDA/NCCL on 79.6 GiB = 85.5e9 bytes
  const DeviceMemory full = device_memory(tensors, plan, hw, 0.5);
  CHECK(full.allocator_reserve_bytes < 0.5 * 20e9);
  CHECK(full.device_used_bytes == Approx(hw.gpu.memory_bytes));
  tensors.optimizer_bytes = 90e9;  // over on tensors alone: no reserve, and more than the GPU
  const DeviceMemory over = device_memory(tensors, plan, hw, 0.5);
  CHECK(over.allocator_reserve_bytes == 0);
  CHECK(over.device_used_bytes > hw.gpu.memory_bytes);
  tensors.optimizer_bytes = 10e9;
  // The CPU host: its tensors only.
  hw.cluster = "host";
  const DeviceMemory host = device_memory(tensors, plan, hw, 0.2);
  CHECK(host.device_used_bytes == 40e9);
  CHECK(host.allocator_reserve_bytes == 0);
}

TEST_CASE("the device peak is the stage the device fills most, which need not hold the most tensors") {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  ParallelPlan plan;
  plan.pp = 2;
  RankMemory ranks;
  ranks.stages.resize(2);
  ranks.stages[0].stage = 0;
  ranks.stages[0].memory.optimizer_bytes = 41e9;  // more tensors, nothing transient
  ranks.stages[1].stage = 1;
  ranks.stages[1].memory.activations_bytes = 40e9;
  const DevicePeak peak = device_peak(ranks, plan, hw, 0.25);
  CHECK(peak.stage == 1);
  CHECK(peak.memory.reserved_bytes == Approx(50e9));
  CHECK(device_peak(ranks, plan, hw, 0.0).stage == 0);
}

TEST_CASE("the fit set keeps supported runs with a throughput, the fit half when asked, by group") {
  const auto runs = load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/published-runs.json");
  const FitSet all = fit_set(runs, {}, false), half = fit_set(runs, {}, true);
  for (const PublishedRun* r : all.runs) CHECK(r->supported());
  CHECK(half.runs.size() < all.runs.size());
  CHECK(half.groups.size() <= all.groups.size());  // a one-run group (BLOOM) has no fit half
  const FitSet one = fit_set(runs, {"bloom"}, false);
  CHECK(one.groups == std::vector<std::string>{"bloom"});
  CHECK(one.runs.size() == 1);
}

TEST_CASE("a zero size is reported, not divided by, when a framework default needs it") {
  // torchtitan's micro-batch default divides the global batch by dp: dp 0 must be an error.
  const std::string path = write_runs("pr_dp0.json", "\"torchtitan\"", "a100-sxm-80gb",
                                      R"("dp": 0, "tp": 1, "pp": 1, "global_batch": 8, "micro_batch": null)");
  CHECK_THROWS_WITH(load_published_runs(path), Catch::Contains("/runs/0/plan/dp") && Catch::Contains("must be >= 1"));
}

TEST_CASE("an MoE run lists the expert TP and dispatcher it was priced with, unless its plan states them") {
  const std::string moe = R"(, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 1024, "shared_experts": null})";
  const std::string plan = R"("dp": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 8, "vpp": null, "micro_batch": 1, "global_batch": 64,
                                "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)";
  const auto runs = load_published_runs(write_runs("pr_moe.json", "\"megatron-bridge\"", "h100-sxm-80gb", plan,
                                                   R"("tokens_per_s_per_gpu": 1000)", R"("distributed_optimizer")", "a table", moe));
  REQUIRE(runs.size() == 1);
  CHECK(used(runs[0], "plan.expert_tp=1"));
  CHECK(used(runs[0], "plan.moe_dispatcher=alltoall"));
  const auto stated = load_published_runs(write_runs("pr_moe_flex.json", "\"megatron-bridge\"", "h100-sxm-80gb",
                                                     plan + R"(, "moe_dispatcher": "flex")", R"("tokens_per_s_per_gpu": 1000)",
                                                     R"("distributed_optimizer")", "a table", moe));
  REQUIRE(stated.size() == 1);
  CHECK(stated[0].plan.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK_FALSE(used(stated[0], "plan.moe_dispatcher=alltoall"));
  const auto dense = load_published_runs(write_runs("pr_dense_defaults.json", "\"megatron-bridge\"", "h100-sxm-80gb",
      R"("dp": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "vpp": null, "micro_batch": 1, "global_batch": 64,
         "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)"));
  REQUIRE(dense.size() == 1);
  CHECK_FALSE(used(dense[0], "plan.expert_tp=1"));
}

TEST_CASE("an FP8 run's scaling: fp8_current_scaling reads as tensorwise, Megatron-Bridge's runs default to it, NeMo's to delayed") {
  const std::string plan = R"("dp": 4, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "vpp": null, "micro_batch": 1, "global_batch": 64,
      "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)";
  const auto fp8_run = [&](const std::string& name, const std::string& framework, const std::string& options) {
    const std::string path = write_runs(name, framework, "h100-sxm-80gb", plan, R"("tokens_per_s_per_gpu": 1000)", options);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find(R"("precision": null)"), 17, R"("precision": "fp8")");
    std::ofstream(path) << text;
    return load_published_runs(path).at(0);
  };
  const PublishedRun stated = fp8_run("pr_fp8_cs.json", "\"nemo\"", R"("fp8_current_scaling")");
  CHECK(stated.plan.fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(stated.options_not_modeled.empty());
  const PublishedRun bridge = fp8_run("pr_fp8_bridge.json", "\"megatron-bridge\"", R"("distributed_optimizer")");
  CHECK(bridge.plan.fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(used(bridge, "plan.fp8_recipe=tensorwise (megatron-bridge's FP8 recipes are per-tensor current scaling)"));
  CHECK(fp8_run("pr_fp8_nemo.json", "\"nemo\"", R"("distributed_optimizer")").plan.fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(fp8_run("pr_fp8_rowwise.json", "\"torchtitan\"", R"("float8_rowwise")").plan.fp8_recipe == Fp8Recipe::kRowwise);
  // FP8 primary weights: NeMo 2's and Megatron-Bridge's default, said so; torchtitan's FP8 is torchao's.
  CHECK(bridge.plan.fp8_params);
  CHECK(used(bridge, "plan.fp8_params=true (megatron-bridge's FP8 recipes keep FP8 primary weights)"));
  CHECK_FALSE(bridge.plan.grad_reduce_in_fp32);
  const PublishedRun titan = fp8_run("pr_fp8_titan.json", "\"torchtitan\"", R"("torch_compile")");
  CHECK(titan.plan.torchao_float8);
  CHECK_FALSE(titan.plan.fp8_params);
}

TEST_CASE("GPT-NeoX runs: the softmax and bias-GELU fusions are off unless the run names them") {
  const std::string plan = R"("dp": 4, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "vpp": null, "micro_batch": 1, "global_batch": 64,
      "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)";
  const auto neox_run = [&](const std::string& name, const std::string& options) {
    return load_published_runs(write_runs(name, "\"gpt-neox\"", "a100-sxm-80gb", plan, R"("tokens_per_s_per_gpu": 1000)", options)).at(0);
  };
  const PublishedRun plain = neox_run("pr_neox_plain.json", R"("zero1")");
  CHECK_FALSE(plain.plan.softmax_fusion);
  CHECK_FALSE(plain.plan.bias_gelu_fusion);
  const PublishedRun fused = neox_run("pr_neox_fused.json", R"("scaled_upper_triang_masked_softmax_fusion", "bias_gelu_fusion")");
  CHECK(fused.plan.softmax_fusion);
  CHECK(fused.plan.bias_gelu_fusion);
  CHECK(fused.options_not_modeled.empty());
}

TEST_CASE("an MoE run's recipe settings stated as options: dispatcher, expert TP, recompute modules, unknown values stay not modeled") {
  const std::string moe = R"(, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 1024, "shared_experts": null})";
  const std::string plan = R"("dp": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 8, "vpp": null, "micro_batch": 1, "global_batch": 64,
                                "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)";
  const auto runs = load_published_runs(write_runs("pr_moe_options.json", "\"megatron-bridge\"", "h100-sxm-80gb", plan,
      R"("tokens_per_s_per_gpu": 1000)",
      R"("moe_token_dispatcher:flex", "expert_tensor_parallel:1", "recompute_modules:layernorm,moe_act", "moe_router_force_load_balancing", "moe_dropless", "moe_token_dispatcher:nccl")",
      "a table", moe));
  REQUIRE(runs.size() == 1);
  const PublishedRun& r = runs[0];
  CHECK(r.plan.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK(r.plan.expert_tp == 1);
  CHECK(r.plan.recompute == Recompute::kSelective);
  CHECK(r.plan.recompute_modules == (kRecomputeLayernorm | kRecomputeMoeAct));
  CHECK_FALSE(used(r, "plan.moe_dispatcher=alltoall"));
  CHECK_FALSE(used(r, "plan.recompute=none"));
  CHECK(r.options_not_modeled == std::vector<std::string>{"moe_token_dispatcher:nccl"});
}

TEST_CASE("a run stating selective recomputation takes its recompute_modules option's modules, a full one keeps full") {
  const std::string moe = R"(, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 1024, "shared_experts": null})";
  const auto run = [&](const char* file, const char* recompute) {
    const std::string plan = std::string(R"("dp": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 8, "vpp": null, "micro_batch": 1, "global_batch": 64,
                                "zero_stage": null, "recompute": )") + recompute + R"(, "sequence_parallel": null, "schedule": null)";
    return load_published_runs(write_runs(file, "\"megatron-bridge\"", "h100-sxm-80gb", plan, R"("tokens_per_s_per_gpu": 1000)",
                                          R"("recompute_modules:layernorm,moe_act")", "a table", moe)).at(0);
  };
  const PublishedRun selective = run("pr_selective_modules.json", R"("selective")");
  CHECK(selective.plan.recompute == Recompute::kSelective);
  CHECK(selective.plan.recompute_modules == (kRecomputeLayernorm | kRecomputeMoeAct));  // not the default core_attn
  const PublishedRun full = run("pr_full_modules.json", R"("full")");
  CHECK(full.plan.recompute == Recompute::kFull);
}

TEST_CASE("a run's TP overlap option at TP 1 is a note, not a refusal (its framework switches it off)") {
  const auto runs = load_published_runs(write_runs("pr_tp1_overlap.json", "\"megatron-bridge\"", "h100-sxm-80gb",
      R"("dp": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "vpp": null, "micro_batch": 1, "global_batch": 64,
         "zero_stage": null, "recompute": null, "sequence_parallel": null, "schedule": null)",
      R"("tokens_per_s_per_gpu": 1000)", R"("tp_comm_overlap")"));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].supported());
  CHECK_FALSE(runs[0].plan.tp_comm_overlap);
  CHECK(used(runs[0], "plan.tp_comm_overlap=false (stated, not applied: tp 1, as the framework disables it)"));
}
