// What a training framework does when a run (or a user) does not say: the defaults each of
// Megatron-LM, Megatron-Core (NeMo, Megatron-Bridge), Megatron-DeepSpeed, DeepSpeed, torchtitan and
// LLM Foundry applies to a plan, with the source of each, and the one function that applies them
// (apply_framework_preset): `--framework`, the published runs (`framework`, published-runs v2; an
// unknown name falls back to the generic preset, and says so), the DeepSpeed and torchtitan
// importers and the search space all go through it. docs/validation.md lists the table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/parallel_plan.hpp"

namespace trainsim {

struct FrameworkPreset {
  std::string name;             // as runs write it: "megatron-core", "torchtitan", ...
  bool known = true;            // false: the generic preset stands in for an unknown name
  int zero_stage = 0;           // when the plan does not state it
  bool sequence_parallel_with_tp = false;  // SP on whenever tp > 1, unless stated
  // Micro-batch when not stated: false = 1 (Megatron's --micro-batch-size default); true = the
  // whole local batch at once when there is no pipeline (torchtitan: no gradient accumulation
  // unless asked), 1 with a pipeline (its pipeline micro-batch size default).
  bool local_batch_is_micro_batch = false;
  std::string source;           // where these defaults are documented
  // Attention on Hopper runs FlashAttention-2 (PyTorch SDPA's flash backend) instead of cuDNN's
  // fused attention (Transformer Engine): sim/reference_efficiency.hpp.
  bool flash2_attention_on_hopper = false;
  // Attention is a fused (flash-style) kernel unless stated; false: Megatron's unfused core
  // attention (batched GEMMs around a fused scale-mask-softmax).
  bool fused_attention = true;
  // Data-parallel gradient reduction overlaps the backward unless stated; false: it runs after
  // the backward.
  bool dp_overlap = true;
  // DeepSpeed: zero_optimization.overlap_comm defaults to (stage == 3) (deepspeed/runtime/zero/
  // config.py, overlap_comm_valid), so the gradient reduction overlaps the backward only at ZeRO-3.
  bool dp_overlap_only_at_zero3 = false;
  // The loss is PyTorch's cross_entropy on the fp32-cast logits (LossKernel::kPytorch).
  bool pytorch_cross_entropy = false;
  // "Selective" recompute means per-op checkpointing (Recompute::kSelectiveOp).
  bool per_op_checkpointing = false;
  // Eager PyTorch unless the run is compiled (torch.compile off by default): RMSNorm runs as
  // PyTorch's composite (NormKernel::kEager). Runs listing torch_compile, or async_tp (which
  // torchtitan refuses without compile), are compiled.
  bool eager_unless_compiled = false;
  // Every TP collective overlapped with a GEMM (the plan's tp_comm_overlap) whenever tp > 1 with
  // sequence parallelism, unless stated.
  bool tp_comm_overlap_with_sp = false;
  // The backward's TP all-reduce overlapped with the weight-gradient GEMMs (the plan's tp_overlap;
  // Megatron-LM's asynchronous TP all-reduce) unless stated; false: a version from before it.
  bool tp_overlap = true;
  // A compiled run (torch.compile) compiles the loss with the model (LossKernel::kCompiled; with
  // pytorch_cross_entropy): torchtitan since PR #1033 (2025-04-02).
  bool compiled_loss = false;
  // With a pipeline, a micro-batch not stated is the local batch over the pipeline ranks (as many
  // micro-batches as ranks: torchtitan before PR #1073, 2025-04-07); false: 1.
  bool local_batch_over_pp = false;
  // ZeRO-3's collectives as DeepSpeed issues them (Zero3Collectives::kDeepSpeed) unless stated.
  // DeepSpeed's ZeRO engine: ZeRO-3's collectives as it issues them (Zero3Collectives::kDeepSpeed)
  // and its gradient buckets (ZeroEngine::kDeepSpeed), unless stated.
  bool deepspeed_zero3_collectives = false;
  // FP8 runs scale per tensor from the current amax (Fp8Recipe::kTensorwise) unless stated;
  // false: Transformer Engine's delayed scaling (Megatron-LM's and NeMo's default).
  bool fp8_tensorwise = false;
  // Gradients accumulated and reduced in the 16-bit dtype (the plan's grad_reduce_in_fp32 off)
  // unless stated; false: fp32 (Megatron-Core's DDP default with --bf16).
  bool grad_reduce_in_bf16 = false;
  // FP8 linears are torchao's Float8Linear (the plan's torchao_float8) unless stated.
  bool torchao_float8 = false;
  // FP8 primary weights (the plan's fp8_params) with per-tensor FP8 and MXFP8 unless stated.
  bool fp8_params = false;
  // Unfused attention's softmax and a biased GELU as PyTorch's separate kernels (the plan's
  // softmax_fusion and bias_gelu_fusion off) unless stated.
  bool unfused_pointwise = false;
  // Who issues the layers' ops unless stated (the plan's host_stack): Transformer Engine's modules
  // under Megatron-Core, or PyTorch's modules and legacy Megatron kernels.
  HostStack host_stack = HostStack::kTransformerEngine;
};

// Whether `preset` keeps FP8 primary weights for a plan of this precision and recipe that does
// not say (FrameworkPreset::fp8_params: not under blockwise scaling, nor NVFP4).
bool preset_fp8_params(const FrameworkPreset& preset, const ParallelPlan& plan);

// What a plan's source states (flags, a plan file, a run's record, an imported file): the knobs a
// preset leaves as they are.
struct StatedKnobs {
  std::vector<std::string> keys;  // plan keys, as plan JSON spells them: "zero_stage", "norm", ...
  // The run is compiled (torch.compile): RMSNorm fused, the loss compiled where the framework
  // compiles it (FrameworkPreset::compiled_loss).
  bool compiled = false;
  bool has(const std::string& key) const;
};

// One knob a preset set: its plan key, its value as plan JSON writes it, and why, where the value
// alone does not say.
struct PresetSetting {
  std::string key;    // "zero_stage"
  std::string value;  // "1", "true", "unfused", "selective_op"
  std::string why;    // "the local batch at once"; "" for most
};

// Sets what `stated` leaves out of `plan` to `preset`'s defaults, in this order (each may read the
// ones before): zero_stage; sequence_parallel (with tp > 1); tp_comm_overlap (with SP); attention;
// cross_entropy; norm; softmax_fusion; bias_gelu_fusion; recompute (selective becomes selective_op
// where per-op checkpointing is the framework's only selective recomputation, stated or not);
// dp_overlap; tp_overlap; fp8_recipe; grad_reduce_in_fp32; torchao_float8; fp8_params; host_stack;
// zero3_collectives; zero_engine; micro_batch (from a stated global batch, where it divides over dp). A knob the preset has no default for
// stays as it is. Returns what it set, in that order. Never throws.
std::vector<PresetSetting> apply_framework_preset(const FrameworkPreset& preset, ParallelPlan& plan, const StatedKnobs& stated);

// The preset for `name` ("" = not stated: the generic preset). Never throws.
FrameworkPreset framework_preset(const std::string& name);

// Names with a preset of their own (for messages and docs).
std::vector<std::string> framework_preset_names();

}  // namespace trainsim
