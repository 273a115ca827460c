// A published run's `options` (INTERFACE.md): which the simulator models, and the "key:value"
// recipe settings some runs state. In: the run's JSON; out: lookups and the modeled verdict.
// sim/published_runs.cpp applies them to the plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/parallel_plan.hpp"

namespace trainsim {

// Whether the run lists `option` exactly.
bool has_option(const nlohmann::json& run, const char* option);

// A "key:value" option's value, or nullopt when the run lists no option with that key (the first
// one with it when several do).
std::optional<std::string> option_value(const nlohmann::json& run, const std::string& key);

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string> comma_list(const std::string& text);

// What a run's CUDA graph settings capture (Megatron-Core's --cuda-graph-impl and
// --cuda-graph-scope as cuda_graph_impl:... and cuda_graph_scope:...; the 25.09 tables'
// cuda_graphs:true|false, Megatron-Core's local graphs of whole layers); nullopt where it states none.
std::optional<CudaGraphs> stated_cuda_graphs(const nlohmann::json& run);

// Whether a run's options put the experts on Transformer Engine's op fuser (the plan's
// te_op_fuser): cutedsl_fused_grouped_mlp, or a per-rank expert capacity that required it.
bool stated_te_op_fuser(const nlohmann::json& run);

// A LoRA run's (peft:lora) adapter rank as Megatron-Bridge's recipe gives the run's model, and
// which recipe says so; nullopt for a run without LoRA.
struct LoraRank {
  int64_t rank = 0;
  std::string source;
};
std::optional<LoraRank> stated_lora_rank(const nlohmann::json& run);

// Whether a "key:value" option is a recipe setting the plan takes: moe_token_dispatcher (the
// plan's moe_dispatcher), expert_tensor_parallel (expert_tp, a positive integer),
// recompute_modules (selective recomputation of those modules), with a value the plan accepts.
bool is_modeled_setting(const std::string& option);

// Whether validate prices what the option says (else it is listed as not modeled).
bool option_is_modeled(const std::string& option);

}  // namespace trainsim
