// What a published run's source leaves out (sim/published_run_defaults.hpp).
#include "sim/published_run_defaults.hpp"

#include <limits>
#include <optional>

#include "common/limits.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/published_run_models.hpp"
#include "sim/published_run_options.hpp"

namespace trainsim {

namespace {

using nlohmann::json;

bool is_null(const json& object, const char* key) { return !object.contains(key) || object[key].is_null(); }

int64_t int_or(const json& object, const char* key, int64_t fallback) { return stated_size(object, key, fallback); }

struct Filler {
  std::vector<std::string>& used;
  // Sets `object[key]` to `value` where the source left it out or null, and records it.
  void operator()(json& object, const char* section, const char* key, const json& value) {
    if (!object.is_object() || !is_null(object, key)) return;
    object[key] = value;
    used.push_back(std::string(section) + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
};

// Multi-head latent attention and the dense first layers of a catalog model (DeepSeek-V3), where
// the run's model block does not state them; each filled field is recorded with what it is.
void fill_known_architecture(json& model, Filler& fill, const ModelSpec& known) {
  if (known.mla && is_null(model, "mla")) {
    const MlaSpec& a = *known.mla;
    fill(model, "model.", "mla",
         json{{"q_lora_rank", a.q_lora_rank}, {"kv_lora_rank", a.kv_lora_rank}, {"qk_nope_head_dim", a.qk_nope_head_dim},
              {"qk_rope_head_dim", a.qk_rope_head_dim}, {"v_head_dim", a.v_head_dim}});
    fill.used.back() += " (multi-head latent attention of the catalog's " + known.name + ", known by name: the format cannot state it)";
  }
  if (known.moe && known.moe->dense_layers > 0 && model.contains("moe") && model["moe"].is_object()) {
    const size_t before = fill.used.size();
    fill(model["moe"], "model.moe.", "dense_layers", known.moe->dense_layers);
    if (fill.used.size() > before) fill.used.back() += " (the catalog's " + known.name + ": its first layers have a dense FFN of ffn_hidden)";
  }
}

// Model fields GPT-3-like sources leave out (Zero Bubble's table): GELU, 4 x hidden, GPT-2's BPE.
void fill_model(json& model, Filler& fill, std::string& unsupported) {
  if (!model.is_object()) return;
  fill(model, "model.", "ffn_kind", "gelu");
  if (is_null(model, "ffn_hidden")) {
    const json* moe = model.contains("moe") && model["moe"].is_object() ? &model["moe"] : nullptr;
    if (moe != nullptr && moe->contains("expert_ffn_hidden") && (*moe)["expert_ffn_hidden"].is_number_integer()) {
      fill(model, "model.", "ffn_hidden", (*moe)["expert_ffn_hidden"]);  // every layer's FFN is experts
    } else if (model["ffn_kind"] == "gelu") {
      // 4 x hidden only where it fits in int64 (found by fuzz/); a larger hidden is refused by the model checks.
      const int64_t hidden = int_or(model, "hidden", 0);
      fill(model, "model.", "ffn_hidden", hidden <= std::numeric_limits<int64_t>::max() / 4 ? 4 * hidden : hidden);
    } else {
      unsupported = "model.ffn_hidden is not stated and the model is not a GELU one (no 4 x hidden default)";
      fill(model, "model.", "ffn_hidden", 1);
    }
  }
  fill(model, "model.", "vocab", 50257);
  // The format has no head_dim, no sliding window, no clamped GLU, no YaRN factor, no multi-head
  // latent attention and no dense first layers of an MoE model: a model the catalog knows by the same name (or by a name of
  // kArchitectureNames), with the same layers, hidden width and heads, takes the catalog's (its
  // Hugging Face config's); else hidden / heads, full attention, Q, K and V projections, every
  // layer MoE.
  const ModelSpec* known = catalog_model_of(model);
  if (known == nullptr) return;
  if (!model.contains("head_dim") && known->head_dim * known->heads != known->hidden) fill(model, "model.", "head_dim", known->head_dim);
  // Biases: the format has none; the FFN family's default (biases with GELU only) unless the
  // catalog's architecture says otherwise (GPT-OSS: every linear, its experts' too; Qwen2: Q, K, V).
  const bool family_bias = model["ffn_kind"] == "gelu";
  if (!model.contains("linear_bias") && known->linear_bias != family_bias) fill(model, "model.", "linear_bias", known->linear_bias);
  if (!model.contains("qkv_bias") && known->qkv_bias && !known->linear_bias) fill(model, "model.", "qkv_bias", true);
  if (known->sliding_window > 0 && !model.contains("sliding_window")) {
    fill(model, "model.", "sliding_window", known->sliding_window);
    fill(model, "model.", "sliding_window_layers", known->sliding_window_layers);
  }
  if (known->glu_clamp > 0 && !model.contains("glu_clamp")) fill(model, "model.", "glu_clamp", known->glu_clamp);
  if (known->rope_attention_factor != 1.0 && !model.contains("rope_attention_factor")) {
    fill(model, "model.", "rope_attention_factor", known->rope_attention_factor);
  }
  fill_known_architecture(model, fill, *known);
}

// The recipe's recomputation, dispatcher and EP overlap where the run states none of them, each
// noted with the recipe's source.
void fill_recipe_settings(json& j, json& pj, Filler& fill, const RecipePlan& recipe) {
  const std::string why = std::string(" (") + recipe.source + ")";
  const auto noted = [&](size_t before) {
    if (fill.used.size() > before) fill.used.back() += why;
  };
  if (recipe.recompute_modules[0] != nullptr && is_null(pj, "recompute")) {
    json modules = json::array();
    for (const char* module : recipe.recompute_modules) {
      if (module != nullptr) modules.push_back(module);
    }
    const size_t before = fill.used.size();
    fill(pj, "plan.", "recompute", "selective");
    fill(pj, "plan.", "recompute_modules", modules);
    noted(before);
  }
  if (recipe.moe_dispatcher != nullptr && !option_value(j, "moe_token_dispatcher")) {
    const size_t before = fill.used.size();
    fill(pj, "plan.", "moe_dispatcher", recipe.moe_dispatcher);
    noted(before);
  }
  if (recipe.ep_comm_overlap && !has_option(j, "overlap_moe_expert_parallel_comm")) {
    const size_t before = fill.used.size();
    fill(pj, "plan.", "ep_comm_overlap", true);
    noted(before);
  }
}

// What a framework recipe for the run's model, GPU and layout runs, where the run states none of it
// (sim/published_run_models.hpp): its recomputation, MoE dispatcher and EP overlap, its pipeline
// layout, and the model's multi-token-prediction depths.
void fill_recipe_plan(json& j, Filler& fill) {
  if (!j.is_object() || !j.contains("model") || !j.contains("plan") || !j["plan"].is_object() || !j.contains("hardware") ||
      !j["hardware"].is_object() || !j.contains("framework") || !j["hardware"].contains("gpu")) {
    return;
  }
  const ModelSpec* known = catalog_model_of(j["model"]);
  const json& hw = j["hardware"];
  if (known == nullptr || !j["framework"].is_string() || !hw["gpu"].is_string()) return;
  const std::string framework = j["framework"].get<std::string>();
  json& pj = j["plan"];
  const RecipeLayout layout{int_or(pj, "tp", 1), int_or(pj, "pp", 1), int_or(pj, "vpp", 1), int_or(pj, "ep", 1), int_or(pj, "micro_batch", 1)};
  const RecipePlan* recipe = recipe_plan(known->name, framework, hw["gpu"].get<std::string>(), layout);
  if (recipe != nullptr) fill_recipe_settings(j, pj, fill, *recipe);
  const int64_t stages = int_or(pj, "pp", 1) * int_or(pj, "vpp", 1);
  const RecipeLayoutMap* pipeline = stages > 1 ? recipe_pipeline_layout(known->name, framework, stages) : nullptr;
  if (pipeline != nullptr && is_null(pj, "first_stage_layers") && is_null(pj, "last_stage_layers")) {
    const size_t before = fill.used.size();
    fill(pj, "plan.", "pipeline_layout", pipeline->layers);
    if (fill.used.size() > before) fill.used.back() += std::string(" (") + pipeline->source + ")";
  }
  if (const std::optional<MtpChoice> mtp = run_mtp_layers(*known, framework, j); mtp && j["model"].is_object()) {
    const size_t before = fill.used.size();
    fill(j["model"], "model.", "mtp_layers", mtp->depths);
    if (fill.used.size() > before) fill.used.back() += " (" + mtp->why + ")";
  }
}

// GPU-dependent network: its reference server's NIC rate, a catalog capability (DGX A100 200 Gb/s, H100/H200 400).
void fill_hardware(json& hw, Filler& fill) {
  if (!hw.is_object()) return;
  const std::string gpu = hw.contains("gpu") && hw["gpu"].is_string() ? hw["gpu"].get<std::string>() : "";
  if (gpu_in_catalog(gpu)) fill(hw, "hardware.", "inter_node_gbps_per_gpu", find_gpu(gpu).capabilities.reference_node_nic_gbps_per_gpu);
}

}  // namespace

int64_t stated_size(const json& object, const char* key, int64_t fallback) {
  if (!object.contains(key) || !object[key].is_number_integer()) return fallback;
  const int64_t value = object[key].get<int64_t>();
  return value >= 1 && value <= limits::kMaxSeqLen ? value : fallback;
}

void fill_source_defaults(json& run, std::vector<std::string>& used, std::string& unsupported) {
  Filler fill{used};
  if (run.contains("model")) fill_model(run["model"], fill, unsupported);
  if (run.contains("hardware")) fill_hardware(run["hardware"], fill);
  fill_recipe_plan(run, fill);
}

}  // namespace trainsim
