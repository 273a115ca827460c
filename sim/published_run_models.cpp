// Published models known by name and their frameworks' recipes (sim/published_run_models.hpp).
#include "sim/published_run_models.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "common/limits.hpp"
#include "model/flops.hpp"
#include "model/model_catalog.hpp"

namespace trainsim {

namespace {

// Published models whose architecture the format cannot state, by the name the sources give them
// (lower case) -> the catalog entry that is that architecture.
constexpr std::pair<const char*, const char*> kArchitectureNames[] = {
    {"deepseek-v3-671b", "deepseek-v3"},
};

// Megatron-Bridge's H100 performance recipes (NVIDIA-NeMo/Megatron-Bridge, scripts/performance at
// the release tags named; a config's moe_a2a_overlap=True is set_moe_a2a_overlap_overrides in
// utils/helpers.py: overlap_moe_expert_parallel_comm and delay_wgrad_compute, the second not
// modeled; a moe_flex_dispatcher_backend of deepep or hybridep is apply_flex_dispatcher_backend,
// training/flex_dispatcher_backend.py: moe_token_dispatcher_type "flex"). The rows of the
// performance tables state none of this.
constexpr RecipePlan kRecipePlans[] = {
    // f37f883 (2025-09-24, "dsv3 2509") run_script.py, for --gpu h100: recompute_modules
    // [mla_up_proj, mlp] (still so in perf_recipes/deepseek/h100/deepseek_v3.py at 067f987),
    // enable_deepep and A2A_1F1B (overlap_moe_expert_parallel_comm, delay_wgrad_compute).
    {"deepseek-v3", "megatron-bridge", "h100-sxm-80gb", {}, {"mla_up_proj", "mlp", nullptr}, "flex", true,
     "Megatron-Bridge's DeepSeek-V3 H100 recipe, 25.09+: recompute_modules mla_up_proj, mlp; DeepEP; EP overlap"},
    // v0.2.0 (25.11) configs/qwen3/workload_base_configs.py QWEN3_235B_A22B_H100_{BF16,FP8_CS}_BASE_CONFIG
    // and v0.3.0-v0.5.0 configs/qwen/qwen3_workload_base_configs.py ..._H100_*_V1/V2: TP2 PP8 VPP4
    // EP32, moe_a2a_overlap=True; qwen3_llm_pretrain.py's h100 config: moe_token_dispatcher_type "alltoall".
    {"qwen3-235b-a22b", "megatron-bridge", "h100-sxm-80gb", {2, 8, 4, 32, 1}, {nullptr}, "alltoall", true,
     "Megatron-Bridge's Qwen3-235B-A22B H100 recipe, 25.11-26.06: NCCL all-to-all, EP overlap"},
    // v0.3.0 (26.02) configs/qwen/qwen3_workload_base_configs.py QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_*_V1:
    // PP2 VPP12 EP8, moe_a2a_overlap=True, moe_flex_dispatcher_backend "deepep".
    {"qwen3-30b-a3b", "megatron-bridge", "h100-sxm-80gb", {1, 2, 12, 8, 1}, {nullptr}, "flex", true,
     "Megatron-Bridge's Qwen3-30B-A3B H100 recipe, 26.02: DeepEP, EP overlap"},
    // v0.3.1-v0.5.0 (26.04+) the same file: EP16 without a pipeline, moe_a2a_overlap=False,
    // moe_flex_dispatcher_backend "hybridep"; qwen3_llm_pretrain.py's h100 config: "flex".
    {"qwen3-30b-a3b", "megatron-bridge", "h100-sxm-80gb", {1, 1, 1, 16, 1}, {nullptr}, "flex", false,
     "Megatron-Bridge's Qwen3-30B-A3B H100 recipe, 26.04+: HybridEP, no EP overlap"},
    // v0.2.0 configs/gpt_oss/workload_base_configs.py GPT_OSS_120B_H100_BF16_BASE_CONFIG (and
    // v0.3.0-v0.5.0 ..._PRETRAIN_CONFIG_H100_*_V1): PP4 EP8 micro-batch 1, recompute_modules
    // [layernorm, moe_act]; recipes/gpt_oss/gpt_oss.py: moe_token_dispatcher_type "alltoall".
    {"gpt-oss-120b", "megatron-bridge", "h100-sxm-80gb", {1, 4, 1, 8, 1}, {"layernorm", "moe_act", nullptr}, "alltoall", false,
     "Megatron-Bridge's GPT-OSS-120B H100 recipe, 25.11+: recompute_modules layernorm, moe_act; NCCL all-to-all"},
};

bool layout_matches(const RecipeLayout& recipe, const RecipeLayout& run) {
  const auto same = [](int64_t want, int64_t have) { return want == 0 || want == have; };
  return same(recipe.tp, run.tp) && same(recipe.pp, run.pp) && same(recipe.vpp, run.vpp) && same(recipe.ep, run.ep) &&
         same(recipe.micro_batch, run.micro_batch);
}

// A stated size, or 0 where it is missing, mistyped or out of bounds (the reader reports those).
int64_t size_of(const nlohmann::json& model, const char* key) {
  if (!model.contains(key) || !model[key].is_number_integer()) return 0;
  const int64_t value = model[key].get<int64_t>();
  return value >= 1 && value <= limits::kMaxSeqLen ? value : 0;
}

// Megatron-Bridge's DeepSeek-V3 layouts (recipes/deepseek/deepseek_v3.py map_pp_vp_to_layout /
// layout_map, f37f883 (25.09) to v0.6.0: by (pp, vpp), the embedding on the first stage and the MTP
// depths and loss on the last; the H100's PP8 x VPP4 "Et|(tt|)*30mL" in f37f883's
// scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.yaml and v0.3.0+'s
// deepseek_workload_base_configs.py pp_layout, which also gives 16 stages as "Et*4|(t*4|)*14tmL").
const RecipeLayoutMap kRecipeLayouts[] = {
    {"deepseek-v3", 4, {16, 16, 16, 13}, "Megatron-Bridge's DeepSeek-V3 layout for 4 virtual stages (layout_map (4, 1))"},
    {"deepseek-v3", 8, {8, 8, 8, 8, 8, 8, 8, 5}, "Megatron-Bridge's DeepSeek-V3 layout for 8 virtual stages (layout_map (8, 1), (4, 2))"},
    {"deepseek-v3", 16, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1},
     "Megatron-Bridge's DeepSeek-V3 layout for 16 virtual stages (layout_map (16, 1), (8, 2), (4, 4); pp_layout Et*4|(t*4|)*14tmL)"},
    {"deepseek-v3", 32, {1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0},
     "Megatron-Bridge's DeepSeek-V3 layout for 32 virtual stages (pp_layout Et|(tt|)*30mL)"},
};

bool megatron_family(const std::string& framework) {
  return framework == "megatron-bridge" || framework == "nemo" || framework == "megatron-lm" || framework == "megatron-core";
}

// FLOPs per token as Megatron counts them (num_floating_point_operations): forward and backward,
// causal attention halved.
double megatron_flops_per_token(const ModelSpec& m) {
  const FlopsPerToken f = flops_per_token(m, Recompute::kNone);
  return f.model - 1.5 * f.forward_attention;
}

}  // namespace

std::optional<MtpChoice> run_mtp_layers(const ModelSpec& known, const std::string& framework, const nlohmann::json& run) {
  if (known.mtp_layers <= 0) return std::nullopt;
  ModelSpec m = known;
  if (run.contains("model") && size_of(run["model"], "seq_len") > 0) m.seq_len = size_of(run["model"], "seq_len");
  if (run.contains("model") && size_of(run["model"], "vocab") > 0) m.vocab = size_of(run["model"], "vocab");
  const nlohmann::json* measured = run.contains("measured") && run["measured"].is_object() ? &run["measured"] : nullptr;
  const auto number = [&](const char* key) {
    return measured != nullptr && measured->contains(key) && (*measured)[key].is_number() ? (*measured)[key].get<double>() : 0.0;
  };
  const double tflops = number("model_tflops_per_gpu"), tokens = number("tokens_per_s_per_gpu");
  if (tflops > 0 && tokens > 0) {
    const double stated = tflops * 1e12 / tokens;
    m.mtp_layers = 0;
    const double without = megatron_flops_per_token(m);
    m.mtp_layers = known.mtp_layers;
    const double with = megatron_flops_per_token(m);
    const auto g = [](double flops) { return std::to_string(static_cast<int64_t>(flops / 1e8 + 0.5) / 10) + "." +
                                             std::to_string(static_cast<int64_t>(flops / 1e8 + 0.5) % 10) + " G"; };
    const std::string counts = "the record's " + g(stated) + " FLOPs per token (model TFLOP/s over tokens/s) against Megatron's count of " +
                               g(without) + " without multi-token prediction and " + g(with) + " with " + std::to_string(known.mtp_layers);
    if (std::abs(stated / with - 1.0) <= 0.02) return MtpChoice{known.mtp_layers, counts};
    if (std::abs(stated / without - 1.0) <= 0.02) return MtpChoice{0, counts};
  }
  if (megatron_family(framework)) {
    return MtpChoice{known.mtp_layers, "the catalog's " + known.name + " (Megatron-Bridge's DeepSeek-V3 recipes: mtp_num_layers " +
                                           std::to_string(known.mtp_layers) + ")"};
  }
  return MtpChoice{0, "a " + framework + " run: multi-token prediction is Megatron-Core's (--mtp-num-layers)"};
}

const RecipeLayoutMap* recipe_pipeline_layout(const std::string& model, const std::string& framework, int64_t virtual_stages) {
  if (framework != "megatron-bridge") return nullptr;
  for (const RecipeLayoutMap& layout : kRecipeLayouts) {
    if (model == layout.model && virtual_stages == layout.virtual_stages) return &layout;
  }
  return nullptr;
}

const ModelSpec* catalog_model_of(const nlohmann::json& model) {
  if (!model.is_object() || !model.contains("name") || !model["name"].is_string()) return nullptr;
  std::string name = model["name"].get<std::string>();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [run_name, catalog_name] : kArchitectureNames) {
    if (name == run_name) name = catalog_name;
  }
  for (const ModelSpec& known : builtin_models()) {
    if (known.name == name && known.layers == size_of(model, "layers") && known.hidden == size_of(model, "hidden") &&
        known.heads == size_of(model, "heads")) {
      return &known;
    }
  }
  return nullptr;
}

const RecipePlan* recipe_plan(const std::string& model, const std::string& framework, const std::string& gpu, const RecipeLayout& run) {
  for (const RecipePlan& recipe : kRecipePlans) {
    if (model == recipe.model && framework == recipe.framework && gpu == recipe.gpu && layout_matches(recipe.layout, run)) return &recipe;
  }
  return nullptr;
}

}  // namespace trainsim
