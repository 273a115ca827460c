// Published-run options (sim/published_run_options.hpp).
#include "sim/published_run_options.hpp"

#include <algorithm>
#include <cctype>

#include "common/errors.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

using nlohmann::json;

bool has_option(const json& run, const char* option) {
  if (!run.contains("options") || !run["options"].is_array()) return false;
  for (const json& o : run["options"]) {
    if (o == option) return true;
  }
  return false;
}

std::optional<std::string> option_value(const json& run, const std::string& key) {
  if (!run.contains("options") || !run["options"].is_array()) return std::nullopt;
  for (const json& o : run["options"]) {
    if (o.is_string() && o.get<std::string>().rfind(key + ":", 0) == 0) return o.get<std::string>().substr(key.size() + 1);
  }
  return std::nullopt;
}

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t begin = 0; begin <= text.size();) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    out.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return out;
}

std::optional<CudaGraphs> stated_cuda_graphs(const json& run) {
  const auto impl = option_value(run, "cuda_graph_impl");
  const auto scope = option_value(run, "cuda_graph_scope");
  const auto on = option_value(run, "cuda_graphs");
  if (!(impl && is_modeled_setting("cuda_graph_impl:" + *impl)) && !(on && is_modeled_setting("cuda_graphs:" + *on))) return std::nullopt;
  // An implementation without a scope captures whole layers (the scope's default, "full");
  // full_iteration captures everything.
  if (impl && *impl == "full_iteration") return kGraphFullIteration;
  if (impl && *impl != "none") return scope && is_modeled_setting("cuda_graph_scope:" + *scope) ? parse_cuda_graph_list(*scope) : kGraphLayer;
  return !impl && *on == "true" ? kGraphLayer : 0;
}

bool stated_te_op_fuser(const json& run) {
  // Megatron-Bridge's cutedsl_fused_grouped_mlp sets use_transformer_engine_op_fuser
  // (scripts/performance/utils/overrides.py, v0.5.0 and v0.6.0); a per-rank expert capacity
  // (moe_expert_rank_capacity_factor) required it in Megatron-Core through the Megatron-LM that
  // Megatron-Bridge v0.5.0 pins (transformer_config.py at d0b3b77), and the recipe that sets it at
  // v0.6.0 sets the fuser too (perf_recipes/gpt_oss/common.py).
  return has_option(run, "cutedsl_fused_grouped_mlp") || option_value(run, "moe_expert_rank_capacity_factor").has_value();
}

std::optional<LoraRank> stated_lora_rank(const json& run) {
  if (option_value(run, "peft") != std::optional<std::string>("lora")) return std::nullopt;
  // recipes/llama/llama3.py at v0.5.0: Llama 3 8B dim 8, 70B and 405B dim 16 (the 405B recipe
  // adapts linear_qkv only, priced on all four targets); peft/lora.py's default dim 32 otherwise.
  const json* model = run.contains("model") && run["model"].is_object() ? &run["model"] : nullptr;
  std::string name = model != nullptr && model->contains("name") && (*model)["name"].is_string() ? (*model)["name"].get<std::string>() : "";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto ends = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (name.find("llama") == std::string::npos) return LoraRank{32, "peft/lora.py's default"};
  if (ends("-8b")) return LoraRank{8, "its Llama 3 8B recipe"};
  if (ends("-70b") || ends("-405b")) return LoraRank{16, "its Llama 3 70B / 405B recipes"};
  return LoraRank{32, "peft/lora.py's default"};
}

bool is_modeled_setting(const std::string& option) {
  const size_t colon = option.find(':');
  if (colon == std::string::npos) return false;
  const std::string key = option.substr(0, colon), value = option.substr(colon + 1);
  if (key == "expert_tensor_parallel") {
    return !value.empty() && value.size() <= 6 && std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); }) &&
           std::stoll(value) >= 1;
  }
  if (key == "cpu_offloading_num_layers") {  // the plan's cpu_offload_layers
    return !value.empty() && value.size() <= 6 && std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); });
  }
  if (key == "cuda_graph_impl") return value == "none" || value == "local" || value == "transformer_engine" || value == "full_iteration";
  if (key == "cuda_graphs") return value == "true" || value == "false";
  if (key == "peft" || key == "task") return value == "lora";  // the plan's lora_rank
  try {  // the plan's own parsers decide which values it takes
    if (key == "moe_token_dispatcher") parse_moe_dispatcher(value);
    else if (key == "recompute_modules") parse_recompute_modules(comma_list(value));
    else if (key == "cuda_graph_scope") parse_cuda_graph_list(value);
    else return false;
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// Options the simulator models, and how: distributed_optimizer / zero1: ZeRO-1, the plan's
// zero_stage; overlap_grad_reduce: dp_overlap; selective_recompute_per_op: the plan's recompute
// "selective"; torch_compile: fused RMSNorm (FrameworkPreset::eager_unless_compiled);
// fsdp_no_reshard_after_forward: FSDP with a pipeline keeps the gathered weights
// (keeps_gathered_weights; every run listing it pipelines); tp_comm_overlap (Megatron-Core's
// userbuffers) and async_tp (torchtitan's): the plan's tp_comm_overlap; fp8_params: the plan's
// fp8_params; float8_rowwise / fp8_current_scaling: the plan's fp8_recipe rowwise / tensorwise (on
// an FP8 run); overlap_moe_expert_parallel_comm: the plan's ep_comm_overlap;
// moe_router_force_load_balancing and moe_dropless: what the plan assumes unless told otherwise
// (moe_imbalance 1, no capacity factor); scaled_upper_triang_masked_softmax_fusion /
// scaled_masked_softmax_fusion and bias_gelu_fusion (GPT-NeoX's switches): the plan's
// softmax_fusion and bias_gelu_fusion; cutedsl_fused_grouped_mlp: the plan's te_op_fuser (the
// experts' bias inside the fused op; its CuTe DSL kernels are priced as the grouped GEMMs); "key:value" recipe settings: is_modeled_setting (the CUDA
// graph settings cuda_graph_impl, cuda_graph_scope and cuda_graphs: the plan's cuda_graphs).
bool option_is_modeled(const std::string& option) {
  if (is_modeled_setting(option)) return true;
  static const std::vector<std::string> modeled = {"distributed_optimizer", "zero1", "overlap_grad_reduce",
                                                   "selective_recompute_per_op", "torch_compile",
                                                   "fsdp_no_reshard_after_forward", "tp_comm_overlap", "async_tp",
                                                   "fp8_params", "float8_rowwise", "fp8_current_scaling",
                                                   "overlap_moe_expert_parallel_comm", "moe_router_force_load_balancing",
                                                   "moe_dropless", "scaled_upper_triang_masked_softmax_fusion",
                                                   "scaled_masked_softmax_fusion", "bias_gelu_fusion",
                                                   "cutedsl_fused_grouped_mlp"};
  return std::find(modeled.begin(), modeled.end(), option) != modeled.end();
}

}  // namespace trainsim
