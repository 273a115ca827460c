// apply_framework_preset: a framework's defaults fill only what the source leaves out, and it says
// what it set, in order (plan/framework_preset.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "plan/framework_preset.hpp"
#include "plan/plan_json.hpp"

using namespace trainsim;

namespace {

std::vector<std::string> keys_of(const std::vector<PresetSetting>& set) {
  std::vector<std::string> keys;
  for (const PresetSetting& s : set) keys.push_back(s.key);
  return keys;
}

ParallelPlan tp2_plan() {
  ParallelPlan p;
  p.dp = 4;
  p.tp = 2;
  p.global_batch = 32;
  return p;
}

}  // namespace

TEST_CASE("torchtitan's preset shards with FSDP, turns SP on with TP and runs the eager norm and PyTorch's loss") {
  ParallelPlan p = tp2_plan();
  p.recompute = Recompute::kSelective;
  const std::vector<PresetSetting> set = apply_framework_preset(framework_preset("torchtitan"), p, StatedKnobs{{"global_batch"}});
  CHECK(keys_of(set) == std::vector<std::string>{"zero_stage", "sequence_parallel", "cross_entropy", "norm", "recompute", "host_stack", "micro_batch"});
  CHECK(p.host_stack == HostStack::kPytorch);  // PyTorch modules issue its ops
  CHECK(p.zero_stage == 3);
  CHECK(p.sequence_parallel);
  CHECK(p.cross_entropy == LossKernel::kPytorch);
  CHECK(p.norm == NormKernel::kEager);
  CHECK(p.recompute == Recompute::kSelectiveOp);
  CHECK(p.micro_batch == 8);  // the local batch at once: 32 / dp 4
  CHECK(set.back().value == "8");
}

TEST_CASE("a preset leaves every stated knob as it is") {
  ParallelPlan p = tp2_plan();
  p.zero_stage = 1;
  p.cross_entropy = LossKernel::kFused;
  const StatedKnobs stated{{"zero_stage", "sequence_parallel", "cross_entropy", "norm", "micro_batch", "global_batch", "host_stack"}};
  const std::vector<PresetSetting> set = apply_framework_preset(framework_preset("torchtitan"), p, stated);
  CHECK(set.empty());
  CHECK(p.zero_stage == 1);
  CHECK_FALSE(p.sequence_parallel);
  CHECK(p.cross_entropy == LossKernel::kFused);
  CHECK(p.norm == NormKernel::kFused);
  CHECK(p.micro_batch == 1);
}

TEST_CASE("a compiled torchtitan run keeps the fused norm and compiles the loss") {
  ParallelPlan p = tp2_plan();
  StatedKnobs stated{{"global_batch"}, true};
  apply_framework_preset(framework_preset("torchtitan"), p, stated);
  CHECK(p.norm == NormKernel::kFused);
  CHECK(p.cross_entropy == LossKernel::kCompiled);
  FrameworkPreset before_compiled_loss = framework_preset("torchtitan");
  before_compiled_loss.compiled_loss = false;
  ParallelPlan q = tp2_plan();
  apply_framework_preset(before_compiled_loss, q, stated);
  CHECK(q.cross_entropy == LossKernel::kPytorch);
}

TEST_CASE("the micro-batch comes from a stated global batch only where dp divides it") {
  ParallelPlan p = tp2_plan();
  p.global_batch = 30;  // not a multiple of dp 4
  apply_framework_preset(framework_preset("llm-foundry"), p, StatedKnobs{{"global_batch"}});
  CHECK(p.micro_batch == 1);
  ParallelPlan q = tp2_plan();  // no global batch stated: nothing to take it from
  apply_framework_preset(framework_preset("llm-foundry"), q, StatedKnobs{});
  CHECK(q.micro_batch == 1);
  FrameworkPreset old_titan = framework_preset("torchtitan");
  old_titan.local_batch_over_pp = true;  // torchtitan before PR #1073: as many micro-batches as stages
  ParallelPlan r = tp2_plan();
  r.pp = 2;
  apply_framework_preset(old_titan, r, StatedKnobs{{"global_batch"}});
  CHECK(r.micro_batch == 4);  // 32 / (dp 4 x pp 2)
}

TEST_CASE("Megatron-Core recipes overlap TP communication with SP, Megatron-DeepSpeed runs unfused attention without DP overlap") {
  ParallelPlan p = tp2_plan();
  apply_framework_preset(framework_preset("nemo"), p, StatedKnobs{});
  CHECK(p.zero_stage == 1);
  CHECK(p.sequence_parallel);
  CHECK(p.tp_comm_overlap);
  ParallelPlan q = tp2_plan();
  const std::vector<PresetSetting> set = apply_framework_preset(framework_preset("megatron-deepspeed"), q, StatedKnobs{});
  CHECK(keys_of(set) == std::vector<std::string>{"zero_stage", "sequence_parallel", "attention", "dp_overlap", "host_stack"});
  CHECK(q.host_stack == HostStack::kPytorch);  // Megatron's legacy modules
  CHECK(p.host_stack == HostStack::kTransformerEngine);
  CHECK(q.attention == AttentionKernel::kUnfused);
  CHECK_FALSE(q.dp_overlap);
  CHECK(q.tp_overlap);
}

TEST_CASE("DeepSpeed overlaps the gradient reduction with the backward only at ZeRO-3 (overlap_comm's default)") {
  for (const char* framework : {"deepspeed", "megatron-deepspeed"}) {
    INFO(framework);
    for (int64_t stage : {0, 1, 2, 3}) {
      INFO("zero stage " << stage);
      ParallelPlan p = tp2_plan();
      p.zero_stage = stage;
      StatedKnobs stated;
      stated.keys = {"zero_stage"};
      apply_framework_preset(framework_preset(framework), p, stated);
      CHECK(p.dp_overlap == (stage == 3));
    }
    ParallelPlan q = tp2_plan();  // stage not stated: the config's default stage 0
    apply_framework_preset(framework_preset(framework), q, StatedKnobs{});
    CHECK(q.zero_stage == 0);
    CHECK_FALSE(q.dp_overlap);
    ParallelPlan r = tp2_plan();  // an explicit overlap_comm wins
    r.zero_stage = 3;
    r.dp_overlap = false;
    StatedKnobs both;
    both.keys = {"zero_stage", "dp_overlap"};
    apply_framework_preset(framework_preset(framework), r, both);
    CHECK_FALSE(r.dp_overlap);
  }
}

TEST_CASE("Megatron-Bridge's FP8 is per-tensor current scaling unless stated, NeMo's and Megatron-LM's stay delayed") {
  ParallelPlan p = tp2_plan();
  p.precision = Precision::kFp8;
  apply_framework_preset(framework_preset("megatron-bridge"), p, StatedKnobs{{"global_batch"}});
  CHECK(p.fp8_recipe == Fp8Recipe::kTensorwise);
  for (const char* framework : {"nemo", "megatron-lm", "megatron-core"}) {
    ParallelPlan q = tp2_plan();
    q.precision = Precision::kFp8;
    apply_framework_preset(framework_preset(framework), q, StatedKnobs{{"global_batch"}});
    CHECK(q.fp8_recipe == Fp8Recipe::kDelayed);
  }
  ParallelPlan stated = tp2_plan();
  stated.precision = Precision::kFp8;
  apply_framework_preset(framework_preset("megatron-bridge"), stated, StatedKnobs{{"global_batch", "fp8_recipe"}});
  CHECK(stated.fp8_recipe == Fp8Recipe::kDelayed);
  ParallelPlan bf16 = tp2_plan();
  apply_framework_preset(framework_preset("megatron-bridge"), bf16, StatedKnobs{{"global_batch"}});
  CHECK(bf16.fp8_recipe == Fp8Recipe::kDelayed);
}

TEST_CASE("DeepSpeed-engine presets mark DeepSpeed's ZeRO, the plan JSON keeps it at ZeRO >= 1 and reads it back") {
  for (const char* framework : {"deepspeed", "megatron-deepspeed", "gpt-neox"}) {
    ParallelPlan p = tp2_plan();
    p.zero_stage = 1;
    apply_framework_preset(framework_preset(framework), p, StatedKnobs{{"global_batch", "zero_stage"}});
    CHECK(p.zero_engine == ZeroEngine::kDeepSpeed);
  }
  ParallelPlan q = tp2_plan();
  apply_framework_preset(framework_preset("megatron-core"), q, StatedKnobs{{"global_batch"}});
  CHECK(q.zero_engine == ZeroEngine::kMegatron);
  ParallelPlan s = tp2_plan();
  s.zero_stage = 2;
  s.zero_engine = ZeroEngine::kDeepSpeed;
  const std::string path = (std::filesystem::temp_directory_path() / "trainsim_zero_engine_plan.json").string();
  save_plan_json(s, path);
  CHECK(load_plan_file(path).zero_engine == ZeroEngine::kDeepSpeed);
  s.zero_stage = 0;
  CHECK_FALSE(plan_to_json(s).contains("zero_engine"));
}

TEST_CASE("NeMo 2 and Megatron-Bridge keep FP8 primary weights, Megatron-Bridge reduces gradients in bf16, torchtitan's FP8 is torchao's") {
  for (const char* framework : {"nemo", "megatron-bridge"}) {
    INFO(framework);
    for (Precision precision : {Precision::kFp8, Precision::kMxfp8}) {
      ParallelPlan p = tp2_plan();
      p.precision = precision;
      apply_framework_preset(framework_preset(framework), p, StatedKnobs{{"global_batch"}});
      CHECK(p.fp8_params);
    }
    ParallelPlan blockwise = tp2_plan();  // the subchannel recipe keeps bf16 primary weights
    blockwise.precision = Precision::kFp8;
    blockwise.fp8_recipe = Fp8Recipe::kBlockwise;
    apply_framework_preset(framework_preset(framework), blockwise, StatedKnobs{{"global_batch", "fp8_recipe"}});
    CHECK_FALSE(blockwise.fp8_params);
    ParallelPlan nvfp4 = tp2_plan();
    nvfp4.precision = Precision::kNvfp4;
    apply_framework_preset(framework_preset(framework), nvfp4, StatedKnobs{{"global_batch"}});
    CHECK_FALSE(nvfp4.fp8_params);
    ParallelPlan stated = tp2_plan();
    stated.precision = Precision::kFp8;
    apply_framework_preset(framework_preset(framework), stated, StatedKnobs{{"global_batch", "fp8_params"}});
    CHECK_FALSE(stated.fp8_params);
  }
  ParallelPlan bridge = tp2_plan();
  const std::vector<PresetSetting> set = apply_framework_preset(framework_preset("megatron-bridge"), bridge, StatedKnobs{{"global_batch"}});
  CHECK_FALSE(bridge.grad_reduce_in_fp32);
  const std::vector<std::string> set_keys = keys_of(set);
  CHECK(std::find(set_keys.begin(), set_keys.end(), "grad_reduce_in_fp32") != set_keys.end());
  for (const char* framework : {"nemo", "megatron-lm", "megatron-core", "torchtitan"}) {
    ParallelPlan q = tp2_plan();
    apply_framework_preset(framework_preset(framework), q, StatedKnobs{{"global_batch"}});
    CHECK(q.grad_reduce_in_fp32);
    CHECK_FALSE(q.fp8_params);
  }
  ParallelPlan titan = tp2_plan();
  titan.precision = Precision::kFp8;
  apply_framework_preset(framework_preset("torchtitan"), titan, StatedKnobs{{"global_batch"}});
  CHECK(titan.torchao_float8);
  CHECK_FALSE(titan.fp8_params);
  // Both keys travel in the plan JSON, written only when not the default.
  ParallelPlan keys = tp2_plan();
  keys.grad_reduce_in_fp32 = false;
  keys.torchao_float8 = true;
  const nlohmann::ordered_json j = plan_to_json(keys);
  CHECK(j.at("grad_reduce_in_fp32") == false);
  CHECK(j.at("torchao_float8") == true);
  CHECK_FALSE(plan_to_json(tp2_plan()).contains("grad_reduce_in_fp32"));
  const std::string path = (std::filesystem::temp_directory_path() / "trainsim_grad_dtype_plan.json").string();
  save_plan_json(keys, path);
  const ParallelPlan back = load_plan_file(path);
  CHECK_FALSE(back.grad_reduce_in_fp32);
  CHECK(back.torchao_float8);
}

TEST_CASE("GPT-NeoX runs its softmax and bias-GELU unfused unless stated, and the plan JSON and Megatron flags carry it") {
  ParallelPlan p = tp2_plan();
  apply_framework_preset(framework_preset("gpt-neox"), p, StatedKnobs{{"global_batch"}});
  CHECK_FALSE(p.softmax_fusion);
  CHECK_FALSE(p.bias_gelu_fusion);
  ParallelPlan stated = tp2_plan();
  apply_framework_preset(framework_preset("gpt-neox"), stated, StatedKnobs{{"global_batch", "softmax_fusion", "bias_gelu_fusion"}});
  CHECK(stated.softmax_fusion);
  CHECK(stated.bias_gelu_fusion);
  for (const char* framework : {"megatron-deepspeed", "megatron-lm", "deepspeed"}) {
    ParallelPlan q = tp2_plan();
    apply_framework_preset(framework_preset(framework), q, StatedKnobs{{"global_batch"}});
    CHECK(q.softmax_fusion);
    CHECK(q.bias_gelu_fusion);
  }
  const std::string path = (std::filesystem::temp_directory_path() / "trainsim_neox_fusions_plan.json").string();
  save_plan_json(p, path);
  const ParallelPlan back = load_plan_file(path);
  CHECK_FALSE(back.softmax_fusion);
  CHECK_FALSE(back.bias_gelu_fusion);
  CHECK_FALSE(plan_to_json(tp2_plan()).contains("softmax_fusion"));
}
