// Plan JSON (`--plan PATH`; the `plan` block of published-run files) <-> ParallelPlan.
// Keys: dp, tp, pp, cp, ep, vpp, micro_batch, global_batch, zero_stage, recompute, recompute_method,
// recompute_layers, recompute_modules, sequence_parallel, schedule, precision, attention, dp_overlap. `null` or absent
// = the documented default.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/parallel_plan.hpp"

namespace trainsim {

class JsonObjectReader;

// Reads a plan object over `defaults`; the names of keys that were absent or null are appended to
// `defaulted` (validate reports them). Problems go to the reader's list.
ParallelPlan read_plan(JsonObjectReader& reader, const ParallelPlan& defaults, std::vector<std::string>* defaulted);
ParallelPlan load_plan_file(const std::string& path, std::vector<std::string>* defaulted = nullptr);
nlohmann::ordered_json plan_to_json(const ParallelPlan& plan);

Recompute parse_recompute(const std::string& text);
RecomputeMethod parse_recompute_method(const std::string& text);
LossKernel parse_cross_entropy(const std::string& text);
Schedule parse_schedule(const std::string& text);
Precision parse_precision(const std::string& text);
CpComm parse_cp_comm(const std::string& text);
MoeDispatcher parse_moe_dispatcher(const std::string& text);
AttentionKernel parse_attention(const std::string& text);
// Megatron-Core's module names ("core_attn", "moe_act", ...) <-> RecomputeModules; an unknown
// name is an InputError.
RecomputeModules parse_recompute_module(const std::string& name);
RecomputeModules parse_recompute_modules(const std::vector<std::string>& names);
std::vector<std::string> recompute_module_list(RecomputeModules modules);

}  // namespace trainsim
