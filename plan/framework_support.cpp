// The plans each framework cannot run (plan/framework_support.hpp).
#include "plan/framework_support.hpp"

#include "plan/recompute_span.hpp"

namespace trainsim {

namespace {

// Megatron-LM / Megatron-Core (megatron/training/arguments.py): the distributed optimizer is
// ZeRO-1 and FSDP ZeRO-3, no ZeRO-2; 1F1B and interleaved schedules only; selective recomputation
// is of modules, not per op; --recompute-method is uniform or block; --fp8-recipe is delayed,
// tensorwise, mxfp8 or blockwise. The same refusals as the megatron export.
const char* megatron(const ParallelPlan& p) {
  if (p.zero_stage == 2) return "Megatron-LM has no ZeRO-2";
  if (is_zero_bubble(p.schedule)) return "Megatron-LM has no Zero Bubble schedule";
  if (p.recompute == Recompute::kSelectiveOp) return "Megatron-LM has no per-op checkpointing";
  if (p.recompute == Recompute::kFull && p.recompute_method == RecomputeMethod::kEvery && p.recompute_layers > 1) {
    return "Megatron-LM has no every-N-th-layer recomputation";
  }
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kRowwise) return "Megatron-LM has no row-wise FP8";
  return nullptr;
}

// Megatron-DeepSpeed: Megatron's 1F1B pipeline run by DeepSpeed's pipeline engine, which takes
// ZeRO-1 at most ("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism", deepspeed.ai
// pipeline tutorial); its sequence parallelism is DeepSpeed-Ulysses (all-to-all,
// --ds-sequence-parallel-size); no Transformer Engine userbuffers (TP overlap) or FP8 recipes.
const char* megatron_deepspeed(const ParallelPlan& p) {
  if (p.pp > 1 && p.zero_stage > 1) return "Megatron-DeepSpeed's pipeline engine takes ZeRO-1 at most";
  if (p.schedule != Schedule::k1F1B) return "Megatron-DeepSpeed runs the 1F1B pipeline schedule only";
  if (p.cp > 1 && p.cp_comm != CpComm::kA2a) return "Megatron-DeepSpeed's context parallelism is Ulysses (a2a) only";
  if (p.recompute == Recompute::kSelectiveOp) return "Megatron-DeepSpeed has no per-op checkpointing";
  if (p.tp_comm_overlap) return "Megatron-DeepSpeed has no TP communication overlap";
  if (quantized_linears(p.precision)) return "Megatron-DeepSpeed has no FP8 recipe";
  return nullptr;
}

// A DeepSpeed config on its own (the deepspeed export): ZeRO data parallelism; the model code
// owns tensor, pipeline, sequence and expert parallelism and which layers are checkpointed.
const char* deepspeed(const ParallelPlan& p) {
  if (p.tp > 1 || p.pp > 1) return "a DeepSpeed config cannot express tp or pp";
  if (p.cp > 1) return "a DeepSpeed config cannot express context parallelism";
  if (p.ep > 1) return "a DeepSpeed config cannot express expert parallelism";
  if (is_partial_recompute(p)) return "a DeepSpeed config cannot say which layers are recomputed";
  return nullptr;
}

// torchtitan's Llama 3 trainer: the torchtitan export's refusals (interop/torchtitan_export.cpp
// names the source of each).
const char* torchtitan(const ParallelPlan& p) {
  if (p.zero_stage == 1) return "torchtitan has no ZeRO-1 (FSDP2 or DDP)";
  if (p.zero_stage == 2 && p.pp == 1) return "torchtitan's ZeRO-2 (fsdp_reshard_after_forward never) is modeled with a pipeline only";
  if (p.zero_stage == 0 && p.dp > 1 && p.tp * p.pp * p.cp > 1) return "torchtitan's DDP runs only alone";
  if (p.zero_stage == 0 && p.cp > 1) return "torchtitan shards over CP with FSDP";
  if (p.zero_stage == 3 && p.dp_shard > 0 && p.dp_shard % p.cp != 0) return "torchtitan's FSDP mesh spans the CP ranks";
  if (p.recompute == Recompute::kSelective) return "torchtitan has no attention-core recomputation";
  if (is_partial_recompute(p) && p.recompute_method != RecomputeMethod::kEvery) return "torchtitan has no block/uniform-N recomputation";
  if (p.precision == Precision::kFp16) return "torchtitan has no fp16";
  // torchtitan's MXFP8 is torchao's (quantize.linear.mx), not priced: trainsim's is Transformer Engine's.
  if (p.precision == Precision::kMxfp8 || p.precision == Precision::kNvfp4 || (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kBlockwise)) {
    return "torchtitan's block-scaled formats are torchao's (not modeled)";
  }
  if (p.ep > 1) return "torchtitan's Llama 3 trainer has no experts";
  if (is_zero_bubble(p.schedule) && p.schedule != Schedule::kZeroBubbleV) return "torchtitan has no ZB-1p/2p";
  if (p.attention == AttentionKernel::kUnfused) return "torchtitan runs fused attention only";
  if (p.tp > 1 && !p.sequence_parallel) return "torchtitan's TP always shards the norms (SP)";
  if (p.tp_comm_overlap && p.norm != NormKernel::kFused) return "torchtitan's async TP runs only compiled";
  if (!p.dp_overlap) return "torchtitan always overlaps the gradient reduction";
  return nullptr;
}

// LLM Foundry trains with PyTorch FSDP (fsdp_config sharding_strategy FULL_SHARD = ZeRO-3,
// SHARD_GRAD_OP = ZeRO-2, NO_SHARD = ZeRO-0; no ZeRO-1) and no pipeline or context parallelism.
const char* llm_foundry(const ParallelPlan& p) {
  if (p.pp > 1) return "LLM Foundry has no pipeline parallelism";
  if (p.cp > 1) return "LLM Foundry has no context parallelism";
  if (p.zero_stage == 1) return "LLM Foundry's FSDP has no ZeRO-1";
  if (p.precision == Precision::kMxfp8 || p.precision == Precision::kNvfp4 || (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kBlockwise)) {
    return "LLM Foundry has no block-scaled FP8 or FP4 recipe";
  }
  return nullptr;
}

// GPT-NeoX (EleutherAI/gpt-neox@ea7aefd8): megatron/training.py exits on ZeRO-2/3 with the
// PipelineModule or with model parallelism ("ZeRO stage 2/3 and pipeline paralleism are not
// supported simultaneously", "... and model paralleism are not currently supported"); DeepSpeed's
// pipeline engine runs 1F1B; its arguments have no context parallelism; Transformer Engine FP8 with
// delayed scaling only (te_fp8_amax_history_len, te_fp8_amax_compute_algo); no TP overlap.
const char* gpt_neox(const ParallelPlan& p) {
  if (p.zero_stage > 1 && (p.pp > 1 || p.tp > 1)) return "GPT-NeoX runs ZeRO-2/3 only without pipeline or tensor parallelism";
  if (p.pp > 1 && p.schedule != Schedule::k1F1B) return "GPT-NeoX's pipeline engine runs 1F1B only";
  if (p.cp > 1) return "GPT-NeoX has no context parallelism";
  if (p.recompute == Recompute::kSelectiveOp) return "GPT-NeoX has no per-op checkpointing";
  if (p.tp_comm_overlap) return "GPT-NeoX has no TP communication overlap";
  if ((p.precision == Precision::kFp8 && p.fp8_recipe != Fp8Recipe::kDelayed) || p.precision == Precision::kMxfp8 ||
      p.precision == Precision::kNvfp4) {
    return "GPT-NeoX's FP8 is Transformer Engine's delayed scaling";
  }
  return nullptr;
}

}  // namespace

std::optional<FrameworkFamily> framework_family(const std::string& name) {
  if (name == "megatron-lm" || name == "megatron-core" || name == "nemo" || name == "megatron-bridge" || name == "megatron" ||
      name == "torchrun") {
    return FrameworkFamily::kMegatron;
  }
  if (name == "megatron-deepspeed") return FrameworkFamily::kMegatronDeepSpeed;
  if (name == "deepspeed") return FrameworkFamily::kDeepSpeed;
  if (name == "torchtitan") return FrameworkFamily::kTorchtitan;
  if (name == "llm-foundry" || name == "composer") return FrameworkFamily::kLlmFoundry;
  if (name == "gpt-neox") return FrameworkFamily::kGptNeox;
  return std::nullopt;
}

const char* framework_family_name(FrameworkFamily family) {
  switch (family) {
    case FrameworkFamily::kMegatron: return "Megatron-LM";
    case FrameworkFamily::kMegatronDeepSpeed: return "Megatron-DeepSpeed";
    case FrameworkFamily::kDeepSpeed: return "DeepSpeed";
    case FrameworkFamily::kTorchtitan: return "torchtitan";
    case FrameworkFamily::kLlmFoundry: return "LLM Foundry";
    case FrameworkFamily::kGptNeox: return "GPT-NeoX";
  }
  return "";
}

const char* not_runnable(FrameworkFamily family, const ParallelPlan& plan) {
  switch (family) {
    case FrameworkFamily::kMegatron: return megatron(plan);
    case FrameworkFamily::kMegatronDeepSpeed: return megatron_deepspeed(plan);
    case FrameworkFamily::kDeepSpeed: return deepspeed(plan);
    case FrameworkFamily::kTorchtitan: return torchtitan(plan);
    case FrameworkFamily::kLlmFoundry: return llm_foundry(plan);
    case FrameworkFamily::kGptNeox: return gpt_neox(plan);
  }
  return nullptr;
}

const char* not_runnable(const std::vector<FrameworkFamily>& families, const ParallelPlan& plan) {
  for (const FrameworkFamily f : families) {
    if (const char* why = not_runnable(f, plan)) return why;
  }
  return nullptr;
}

}  // namespace trainsim
