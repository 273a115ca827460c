// Plan JSON (`--plan PATH`; the `plan` block of published-run files) <-> ParallelPlan.
// Keys: dp, tp, pp, cp, ep, vpp, micro_batch, global_batch, zero_stage, recompute, recompute_method,
// recompute_layers, recompute_modules, sequence_parallel, schedule, precision, attention, dp_overlap. `null` or absent
// = the documented default.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/parallel_plan.hpp"

namespace trainsim {

class JsonObjectReader;

// Reads a plan object over `defaults`; the names of keys that were absent or null are appended to
// `defaulted` (validate reports them). Problems go to the reader's list.
ParallelPlan read_plan(JsonObjectReader& reader, const ParallelPlan& defaults, std::vector<std::string>* defaulted);
// A plan JSON file; or the output of a command that holds one: a search's (`trainsim.search`: its
// #1 plan, plans[0]), a prediction's or a model report's (`inputs.plan`).
ParallelPlan load_plan_file(const std::string& path, std::vector<std::string>* defaulted = nullptr);
nlohmann::ordered_json plan_to_json(const ParallelPlan& plan);
// Writes plan_to_json(plan) to `path` (`--save-plan`: what load_plan_file reads back); an
// InputError naming the path when it cannot be written.
void save_plan_json(const ParallelPlan& plan, const std::string& path);

Recompute parse_recompute(const std::string& text);
RecomputeMethod parse_recompute_method(const std::string& text);
LossKernel parse_cross_entropy(const std::string& text);
Schedule parse_schedule(const std::string& text);
Precision parse_precision(const std::string& text);
Fp8Recipe parse_fp8_recipe(const std::string& text);
CpComm parse_cp_comm(const std::string& text);
MoeDispatcher parse_moe_dispatcher(const std::string& text);
// pytorch / transformer_engine; throws InputError naming the choices.
HostStack parse_host_stack(const std::string& text);
// Comma-separated scope names (cuda_graph_names); throws InputError naming the unknown one.
CudaGraphs parse_cuda_graphs(const std::vector<std::string>& names);
// The same from "attn,moe_router" ("none" or "": no graphs), as --cuda-graphs and a run's options write it.
CudaGraphs parse_cuda_graph_list(const std::string& text);
AttentionKernel parse_attention(const std::string& text);
// Megatron-Core's module names ("core_attn", "moe_act", ...) <-> RecomputeModules; an unknown
// name is an InputError.
RecomputeModules parse_recompute_module(const std::string& name);
// One CUDA graph scope's flag (cuda_graph_names); throws InputError naming the choices.
CudaGraphs parse_cuda_graph_scope(const std::string& name);
RecomputeModules parse_recompute_modules(const std::vector<std::string>& names);
std::vector<std::string> recompute_module_list(RecomputeModules modules);
// --pipeline-layout "4,4,4,1": a whole number of layers per virtual stage, every one kept (unlike
// comma_list, duplicates are the point); throws InputError naming the item that is not one.
std::vector<int64_t> parse_pipeline_layout(const std::string& text);

// Several values of one key, comma-separated (search --precision bf16,fp8): each item through
// `parse` (one of the parse_* above), which throws InputError for one it does not know; in the
// order given, duplicates once.
template <typename T>
std::vector<T> comma_list(const std::string& text, T (*parse)(const std::string&)) {
  std::vector<T> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const T item = parse(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

}  // namespace trainsim
