// What a training framework does when a run (or a user) does not say: the defaults each of
// Megatron-LM, Megatron-Core (NeMo, Megatron-Bridge), Megatron-DeepSpeed, DeepSpeed, torchtitan and
// LLM Foundry applies to a plan, with the source of each. Published runs name their framework
// (`framework`, published-runs v2); an unknown name falls back to the generic preset, and says so.
// docs/validation.md lists the table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
};

// The preset for `name` ("" = not stated: the generic preset). Never throws.
FrameworkPreset framework_preset(const std::string& name);

// Names with a preset of their own (for messages and docs).
std::vector<std::string> framework_preset_names();

// Published-run options (INTERFACE.md) the simulator models, and how: an option not in this list
// is listed by validate as not modeled.
bool option_is_modeled(const std::string& option);

}  // namespace trainsim
