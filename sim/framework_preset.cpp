// The framework presets and the published-run options the simulator models.
#include "sim/framework_preset.hpp"

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
    p.push_back(nemo);
    nemo.name = "megatron-bridge";
    p.push_back(nemo);
    // DeepSpeed's zero_optimization.stage defaults to 0; Megatron-DeepSpeed takes it from there.
    // Its engine all-reduces gradients after the backward (stage 0; overlap_comm is off below
    // stage 3), and Megatron-DeepSpeed's attention is the unfused core attention unless
    // --use-flash-attn is given (megatron/arguments.py); vTrain's replayed layer is that one
    // (VIA-Research/vTrain@f8dda84 src/model/gpt_modeling.py: baddbmm, FusedScaleMaskSoftmax, bmm).
    const char* ds = "DeepSpeed config defaults (zero_optimization.stage 0, overlap_comm off), Megatron-DeepSpeed "
                     "arguments.py (--use-flash-attn off)";
    FrameworkPreset mds{"megatron-deepspeed", true, 0, false, false, ds};
    mds.fused_attention = false;
    mds.dp_overlap = false;
    p.push_back(mds);
    mds.name = "deepspeed";
    mds.source = "DeepSpeed config defaults (zero_optimization.stage 0, overlap_comm off below stage 3)";
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
    p.push_back(titan);
    // LLM Foundry / Composer benchmark configs shard with FSDP FULL_SHARD.
    p.push_back({"llm-foundry", true, 3, false, true, "llm-foundry scripts/train/benchmarking configs (FSDP FULL_SHARD, flash-attn 2)", true});
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

std::vector<std::string> framework_preset_names() {
  std::vector<std::string> names;
  for (const FrameworkPreset& p : presets()) names.push_back(p.name);
  return names;
}

bool option_is_modeled(const std::string& option) {
  // distributed_optimizer / zero1: ZeRO-1, the plan's zero_stage; overlap_grad_reduce: dp_overlap;
  // selective_recompute_per_op: the plan's recompute "selective"; torch_compile: fused RMSNorm
  // (FrameworkPreset::eager_unless_compiled); fsdp_no_reshard_after_forward: FSDP with a pipeline
  // keeps the gathered weights (keeps_gathered_weights; every run listing it pipelines);
  // tp_comm_overlap (Megatron-Core's userbuffers) and async_tp (torchtitan's): the plan's
  // tp_comm_overlap; fp8_params: the plan's fp8_params; float8_rowwise: the plan's fp8_recipe
  // rowwise (on an FP8 run; sim/published_runs.cpp); overlap_moe_expert_parallel_comm: the plan's
  // ep_comm_overlap.
  static const std::vector<std::string> modeled = {"distributed_optimizer", "zero1", "overlap_grad_reduce",
                                                   "selective_recompute_per_op", "torch_compile",
                                                   "fsdp_no_reshard_after_forward", "tp_comm_overlap", "async_tp",
                                                   "fp8_params", "float8_rowwise", "overlap_moe_expert_parallel_comm"};
  return std::find(modeled.begin(), modeled.end(), option) != modeled.end();
}

}  // namespace trainsim
