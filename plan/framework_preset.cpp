// The framework presets, and applying one to a plan.
#include "plan/framework_preset.hpp"

#include <algorithm>

namespace trainsim {

namespace {

const std::vector<FrameworkPreset>& presets() {
  static const std::vector<FrameworkPreset> all = [] {
    std::vector<FrameworkPreset> p;
    // Megatron-LM's arguments.py: --use-distributed-optimizer and --sequence-parallel are off
    // unless given; --micro-batch-size is the per-GPU batch of one forward.
    p.push_back({"megatron-lm", true, 0, false, false, "Megatron-LM megatron/training/arguments.py defaults"});
    // Megatron-Core as NeMo 2 and Megatron-Bridge configure it: their performance recipes use the
    // distributed optimizer (ZeRO-1) and turn sequence parallelism on with tensor parallelism.
    // Their recipes for models trained with TP also overlap the TP communication through
    // userbuffers (NeMo llm/recipes/llama3_70b.py: MegatronCommOverlapCallback(tp_comm_overlap=True,
    // userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192); Megatron-Bridge training/comm_overlap.py's
    // configs for Llama 3 70B and 405B); Megatron-LM's own --tp-comm-overlap is opt-in.
    const char* mcore = "NeMo 2 / Megatron-Bridge performance recipes (use_distributed_optimizer, sequence_parallel with tp > 1)";
    p.push_back({"megatron-core", true, 1, true, false, mcore});
    FrameworkPreset nemo{"nemo", true, 1, true, false,
                         "NeMo 2 / Megatron-Bridge performance recipes (use_distributed_optimizer, sequence_parallel and "
                         "tp_comm_overlap with tp > 1)"};
    nemo.tp_comm_overlap_with_sp = true;
    // Their FP8 mixed-precision recipes keep FP8 primary weights: NeMo 2's bf16_with_fp8_mixed
    // (nemo/collections/llm/recipes/precision/mixed_precision.py: fp8_params=True), Megatron-
    // Bridge's bf16_with_fp8_delayed_scaling_mixed, _current_scaling_mixed and bf16_with_mxfp8_mixed
    // (training/mixed_precision.py at 067f987: fp8_param_gather=True); its subchannel (blockwise)
    // and NVFP4 recipes do not.
    nemo.fp8_params = true;
    p.push_back(nemo);
    // Megatron-Bridge's performance recipes run FP8 on Hopper as per-tensor current scaling: their
    // H100 FP8 configs are the FP8_CS ones (scripts/performance/configs/{llama,qwen,deepseek,gpt_oss}
    // *_workload_base_configs.py, e.g. QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1, through
    // 2026-07; bf16_with_fp8_current_scaling_mixed).
    // They also reduce gradients in bf16: grad_reduce_in_fp32 false in every Megatron-Bridge
    // performance config, from the YAML ones (scripts/performance/configs/*/*_llm_pretrain.yaml,
    // 2025) through _benchmark_common (src/megatron/bridge/perf_recipes/_common.py at 067f987).
    nemo.name = "megatron-bridge";
    nemo.fp8_tensorwise = true;
    nemo.grad_reduce_in_bf16 = true;
    nemo.source = "NeMo 2 / Megatron-Bridge performance recipes (use_distributed_optimizer, sequence_parallel and "
                  "tp_comm_overlap with tp > 1; FP8 as per-tensor current scaling, the fp8_cs configs; gradients "
                  "reduced in bf16)";
    p.push_back(nemo);
    // DeepSpeed's zero_optimization.stage defaults to 0; Megatron-DeepSpeed takes it from there.
    // Its engine all-reduces gradients after the backward below stage 3: overlap_comm defaults to
    // (stage == 3) (deepspeed/runtime/zero/config.py, overlap_comm_valid); and Megatron-DeepSpeed's attention is the unfused core attention unless
    // --use-flash-attn is given (megatron/arguments.py); vTrain's replayed layer is that one
    // (VIA-Research/vTrain@f8dda84 src/model/gpt_modeling.py: baddbmm, FusedScaleMaskSoftmax, bmm).
    const char* ds = "DeepSpeed config defaults (zero_optimization.stage 0, overlap_comm on only at stage 3), "
                     "Megatron-DeepSpeed arguments.py (--use-flash-attn off)";
    FrameworkPreset mds{"megatron-deepspeed", true, 0, false, false, ds};
    mds.fused_attention = false;
    mds.dp_overlap = false;
    mds.dp_overlap_only_at_zero3 = true;
    // Stage 3 fetches parameters module by module (partitioned_param_coordinator.py).
    mds.deepspeed_zero3_collectives = true;
    // Megatron-DeepSpeed's layers are Megatron's legacy PyTorch modules (no Transformer Engine).
    mds.host_stack = HostStack::kPytorch;
    p.push_back(mds);
    // GPT-NeoX (EleutherAI/gpt-neox@ea7aefd8, megatron/neox_arguments/neox_args.py and
    // megatron/training.py): Megatron's layers on DeepSpeed's engine, so the same ZeRO stage 0 and
    // gradient reduction after the backward below stage 3; attention_config defaults to "global"
    // (the unfused core attention: baddbmm, then PyTorch's masked_fill_ and softmax, as its
    // scale-mask-softmax fusion is off by default, scaled_upper_triang_masked_softmax_fusion False;
    // megatron/model/fused_softmax.py forward_torch_softmax); its bias and GELU unfused too
    // (bias_gelu_fusion False: an add, then the GELU); sequence_parallel off by default.
    FrameworkPreset neox = mds;
    neox.name = "gpt-neox";
    neox.unfused_pointwise = true;  // scaled_upper_triang_masked_softmax_fusion, bias_gelu_fusion False
    neox.source = "GPT-NeoX neox_args.py defaults (DeepSpeed zero_optimization stage 0, overlap_comm on only at stage 3; "
                  "attention_config global: unfused core attention; softmax and bias-GELU fusions off)";
    p.push_back(neox);
    mds.name = "deepspeed";
    mds.source = "DeepSpeed config defaults (zero_optimization.stage 0, overlap_comm on only at stage 3)";
    mds.fused_attention = true;  // a DeepSpeed model brings its own attention; flash-style today
    p.push_back(mds);
    // torchtitan: FSDP2 fully_shard (reshard after forward: ZeRO-3) on the data-parallel mesh,
    // its TP plan shards the norms' activations (SequenceParallel), the local batch runs at once
    // without a pipeline, pipeline micro-batch size 1 with one (since PR #1073, 2025-04-07; before
    // it pp micro-batches: the published-run reader applies the default of a run's date).
    // Its attention is PyTorch SDPA, whose cuDNN backend is opt-in since PyTorch 2.5.1 (PR
    // #138522): on H100 it runs the FlashAttention-2 backend (pytorch #142132: 329 TFLOP/s against
    // cuDNN's 631 on the December 2024 nightly torchtitan's benchmarks used).
    // Its selective activation checkpointing is per op (selective_ac_option "op" in its Llama
    // configs), and its loss PyTorch's cross_entropy on pred.float() (torchtitan/components/loss.py).
    FrameworkPreset titan{"torchtitan", true, 3, true, true,
                          "torchtitan JobConfig defaults and parallelize_llama (FSDP2, SequenceParallel norms, SDPA, per-op "
                          "selective checkpointing, cross_entropy on fp32 logits)",
                          true};
    titan.pytorch_cross_entropy = true;
    titan.per_op_checkpointing = true;
    titan.eager_unless_compiled = true;  // JobConfig compile.enable = false
    titan.compiled_loss = true;          // build_cross_entropy_loss compiles it with the model
    titan.torchao_float8 = true;         // its float8 converter swaps in torchao's Float8Linear
    titan.host_stack = HostStack::kPytorch;  // PyTorch modules (no Transformer Engine)
    p.push_back(titan);
    // LLM Foundry / Composer benchmark configs shard with FSDP FULL_SHARD. Composer is the trainer
    // LLM Foundry runs on (PyTorch FSDP1): the same preset under its name.
    FrameworkPreset foundry{"llm-foundry", true, 3, false, true, "llm-foundry scripts/train/benchmarking configs (FSDP FULL_SHARD, flash-attn 2)", true};
    foundry.host_stack = HostStack::kPytorch;  // PyTorch modules (no Transformer Engine)
    p.push_back(foundry);
    foundry.name = "composer";
    foundry.source = "Composer's FSDP as llm-foundry's benchmarking configs run it (FSDP FULL_SHARD, flash-attn 2)";
    p.push_back(foundry);
    return p;
  }();
  return all;
}

}  // namespace

FrameworkPreset framework_preset(const std::string& name) {
  for (const FrameworkPreset& p : presets()) {
    if (p.name == name) return p;
  }
  FrameworkPreset generic;
  generic.name = name.empty() ? "generic" : name;
  generic.known = false;
  generic.source = "generic preset (Megatron-LM's defaults): no preset for this framework";
  return generic;
}

bool preset_fp8_params(const FrameworkPreset& preset, const ParallelPlan& plan) {
  return preset.fp8_params && fp8_family(plan.precision) && !(plan.precision == Precision::kFp8 && plan.fp8_recipe == Fp8Recipe::kBlockwise);
}

std::vector<std::string> framework_preset_names() {
  std::vector<std::string> names;
  for (const FrameworkPreset& p : presets()) names.push_back(p.name);
  return names;
}

bool StatedKnobs::has(const std::string& key) const { return std::find(keys.begin(), keys.end(), key) != keys.end(); }

namespace {

// The micro-batch a framework runs when the source states only the global batch: the whole local
// batch without a pipeline (local_batch_is_micro_batch), or the local batch over the pipeline ranks
// (local_batch_over_pp). Divisions only: the sizes are not bounded yet.
void fill_micro_batch(const FrameworkPreset& preset, ParallelPlan& p, const StatedKnobs& stated, std::vector<PresetSetting>& set) {
  if (stated.has("micro_batch") || !stated.has("global_batch") || p.dp <= 0 || p.global_batch % p.dp != 0) return;
  const int64_t local = p.global_batch / p.dp;
  if (preset.local_batch_is_micro_batch && p.pp == 1) {
    p.micro_batch = local;
    set.push_back({"micro_batch", std::to_string(p.micro_batch), "the local batch at once"});
  } else if (preset.local_batch_over_pp && p.pp > 1 && local % p.pp == 0) {
    p.micro_batch = local / p.pp;
    set.push_back({"micro_batch", std::to_string(p.micro_batch), "the local batch over the pipeline ranks"});
  }
}

// The kernels: attention, the loss, RMSNorm.
void fill_kernels(const FrameworkPreset& preset, ParallelPlan& p, const StatedKnobs& stated, std::vector<PresetSetting>& set) {
  if (!preset.fused_attention && !stated.has("attention")) {
    p.attention = AttentionKernel::kUnfused;
    set.push_back({"attention", "unfused", ""});
  }
  if (preset.pytorch_cross_entropy && !stated.has("cross_entropy")) {
    const bool compiled = stated.compiled && preset.compiled_loss;
    p.cross_entropy = compiled ? LossKernel::kCompiled : LossKernel::kPytorch;
    set.push_back({"cross_entropy", to_string(p.cross_entropy), compiled ? "a compiled run compiles the loss" : ""});
  }
  if (preset.eager_unless_compiled && !stated.compiled && !stated.has("norm")) {
    p.norm = NormKernel::kEager;
    set.push_back({"norm", "eager", "torch.compile off by default"});
  }
  if (preset.unfused_pointwise && !stated.has("softmax_fusion")) {
    p.softmax_fusion = false;
    set.push_back({"softmax_fusion", "false", ""});
  }
  if (preset.unfused_pointwise && !stated.has("bias_gelu_fusion")) {
    p.bias_gelu_fusion = false;
    set.push_back({"bias_gelu_fusion", "false", ""});
  }
}

// The precision recipe's defaults: FP8 scaling, the gradient dtype, whose FP8 linears, FP8
// primary weights.
void fill_precision(const FrameworkPreset& preset, ParallelPlan& p, const StatedKnobs& stated, std::vector<PresetSetting>& set) {
  if (preset.fp8_tensorwise && p.precision == Precision::kFp8 && !stated.has("fp8_recipe")) {
    p.fp8_recipe = Fp8Recipe::kTensorwise;
    set.push_back({"fp8_recipe", "tensorwise", "the fp8_cs recipes"});
  }
  if (preset.grad_reduce_in_bf16 && !stated.has("grad_reduce_in_fp32")) {  // fp32 training keeps fp32 gradients
    p.grad_reduce_in_fp32 = false;
    set.push_back({"grad_reduce_in_fp32", "false", "gradients reduced in bf16"});
  }
  if (preset.torchao_float8 && p.precision == Precision::kFp8 && !stated.has("torchao_float8")) {
    p.torchao_float8 = true;
    set.push_back({"torchao_float8", "true", "torchao's Float8Linear"});
  }
  if (preset_fp8_params(preset, p) && !stated.has("fp8_params")) {
    p.fp8_params = true;
    set.push_back({"fp8_params", "true", "the FP8 recipes' primary weights"});
  }
  if (preset.host_stack != p.host_stack && !stated.has("host_stack")) {
    p.host_stack = preset.host_stack;
    set.push_back({"host_stack", to_string(p.host_stack), "PyTorch's modules issue the ops"});
  }
}

}  // namespace

std::vector<PresetSetting> apply_framework_preset(const FrameworkPreset& preset, ParallelPlan& p, const StatedKnobs& stated) {
  std::vector<PresetSetting> set;
  if (!stated.has("zero_stage")) {
    p.zero_stage = preset.zero_stage;
    set.push_back({"zero_stage", std::to_string(p.zero_stage), ""});
  }
  if (!stated.has("sequence_parallel")) {
    p.sequence_parallel = preset.sequence_parallel_with_tp && p.tp > 1;
    set.push_back({"sequence_parallel", p.sequence_parallel ? "true" : "false", ""});
  }
  if (preset.tp_comm_overlap_with_sp && p.tp > 1 && p.sequence_parallel && !stated.has("tp_comm_overlap")) {
    p.tp_comm_overlap = true;
    set.push_back({"tp_comm_overlap", "true", ""});
  }
  fill_kernels(preset, p, stated, set);
  if (preset.per_op_checkpointing && p.recompute == Recompute::kSelective) {
    p.recompute = Recompute::kSelectiveOp;  // the framework's only selective checkpointing
    set.push_back({"recompute", "selective_op", "per-op checkpointing"});
  }
  if (preset.dp_overlap_only_at_zero3 && !stated.has("dp_overlap")) {
    p.dp_overlap = p.zero_stage == 3;
    set.push_back({"dp_overlap", p.dp_overlap ? "true" : "false", p.dp_overlap ? "overlap_comm's default at stage 3" : ""});
  } else if (!preset.dp_overlap && !stated.has("dp_overlap")) {
    p.dp_overlap = false;
    set.push_back({"dp_overlap", "false", ""});
  }
  if (!preset.tp_overlap && !stated.has("tp_overlap")) {
    p.tp_overlap = false;
    set.push_back({"tp_overlap", "false", ""});
  }
  fill_precision(preset, p, stated, set);
  if (preset.deepspeed_zero3_collectives && !stated.has("zero3_collectives")) {
    p.zero3_collectives = Zero3Collectives::kDeepSpeed;
    if (p.zero_stage == 3) set.push_back({"zero3_collectives", "deepspeed", "a gather per module bucket"});
  }
  if (preset.deepspeed_zero3_collectives && !stated.has("zero_engine")) {
    p.zero_engine = ZeroEngine::kDeepSpeed;
    if (p.zero_stage >= 1) set.push_back({"zero_engine", "deepspeed", "its gradient buckets"});
  }
  fill_micro_batch(preset, p, stated, set);
  return set;
}

}  // namespace trainsim
