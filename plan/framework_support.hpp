// What each training framework can run: the plans a search for a framework (--framework, the
// framework of a --from file, the target of --export) leaves out, each with the reason, so the
// plans it ranks are ones the framework runs and its exporter writes. The rules are the exporters'
// refusals (interop/plan_export.cpp, interop/torchtitan_export.cpp) and the frameworks' documented
// limits named beside each in framework_support.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/parallel_plan.hpp"

namespace trainsim {

enum class FrameworkFamily {
  kMegatron,           // Megatron-LM, Megatron-Core, NeMo, Megatron-Bridge (export megatron / torchrun)
  kMegatronDeepSpeed,  // Megatron-DeepSpeed: Megatron's parallelism, DeepSpeed's ZeRO and pipeline engine
  kDeepSpeed,          // a DeepSpeed config on its own (export deepspeed): data parallelism with ZeRO
  kTorchtitan,         // torchtitan's Llama 3 trainer (export torchtitan)
  kLlmFoundry,         // LLM Foundry: FSDP (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD)
  kGptNeox,            // GPT-NeoX: Megatron's TP and SP, DeepSpeed's ZeRO and pipeline engine
};

// The family of a --framework preset name or an --export / --from format: "megatron-core",
// "nemo", "torchrun", "deepspeed", ...; nullopt for a name with no rules (the generic preset).
std::optional<FrameworkFamily> framework_family(const std::string& name);

// "Megatron-LM", "torchtitan", ... as messages name the family.
const char* framework_family_name(FrameworkFamily family);

// Why `family` cannot run `plan`, as a short reason naming the framework and the setting
// ("Megatron-LM has no ZeRO-2"), or nullptr when it can. A static string: cheap enough for the
// screen of every candidate.
const char* not_runnable(FrameworkFamily family, const ParallelPlan& plan);

// The first reason of any of `families` (each must run the plan), or nullptr.
const char* not_runnable(const std::vector<FrameworkFamily>& families, const ParallelPlan& plan);

}  // namespace trainsim
