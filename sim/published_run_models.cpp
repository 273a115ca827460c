// Published models known by name and their frameworks' recipes (sim/published_run_models.hpp).
#include "sim/published_run_models.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "common/limits.hpp"
#include "model/model_catalog.hpp"

namespace trainsim {

namespace {

// Published models whose architecture the format cannot state, by the name the sources give them
// (lower case) -> the catalog entry that is that architecture.
constexpr std::pair<const char*, const char*> kArchitectureNames[] = {
    {"deepseek-v3-671b", "deepseek-v3"},
};

// Megatron-Bridge's DeepSeek-V3 performance configs of 25.09 (NVIDIA-NeMo/Megatron-Bridge@f37f883,
// 2025-09-24, "dsv3 2509", scripts/performance): on H100 recompute_modules [mla_up_proj, mlp] with
// selective recomputation; still so in perf_recipes/deepseek/h100/deepseek_v3.py at 067f987.
constexpr RecipePlan kRecipePlans[] = {
    {"deepseek-v3", "megatron-bridge", "h100-sxm-80gb", {"mla_up_proj", "mlp", nullptr},
     "Megatron-Bridge's DeepSeek-V3 H100 recipe (25.09+: recompute_modules mla_up_proj, mlp)"},
};

// A stated size, or 0 where it is missing, mistyped or out of bounds (the reader reports those).
int64_t size_of(const nlohmann::json& model, const char* key) {
  if (!model.contains(key) || !model[key].is_number_integer()) return 0;
  const int64_t value = model[key].get<int64_t>();
  return value >= 1 && value <= limits::kMaxSeqLen ? value : 0;
}

}  // namespace

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

const RecipePlan* recipe_plan(const std::string& model, const std::string& framework, const std::string& gpu) {
  for (const RecipePlan& recipe : kRecipePlans) {
    if (model == recipe.model && framework == recipe.framework && gpu == recipe.gpu) return &recipe;
  }
  return nullptr;
}

}  // namespace trainsim
