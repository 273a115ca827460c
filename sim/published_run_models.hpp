// Published models the published-run format cannot describe, known by name: which catalog model a
// run's model block is (its architecture: multi-head latent attention, dense first layers, head
// width), and what a framework's recipe for that model runs that a row does not state. In: a run's
// model block, framework and GPU. Out: catalog entries and recipe facts, each with its source.
// The filling of a run's JSON and the record of every default stay in sim/published_runs.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_spec.hpp"

namespace trainsim {

// The catalog model a run's model block names (in any case, or by a source's name for it:
// "DeepSeek-V3-671B" -> deepseek-v3) with the same layers, hidden width and heads; nullptr if none.
const ModelSpec* catalog_model_of(const nlohmann::json& model);

// What a framework's performance recipe for a catalog model on a GPU runs that the published-run
// format cannot state (or a row leaves out), read from the recipe's code: its selective
// recomputation, its MoE token dispatcher and whether it overlaps the EP all-to-alls. A recipe
// written for one layout applies to a run of that layout only (`layout`, 0 = any).
struct RecipeLayout {
  int64_t tp = 0, pp = 0, vpp = 0, ep = 0, micro_batch = 0;  // vpp 1: no interleaving
};
struct RecipePlan {
  const char* model;      // catalog name
  const char* framework;  // the run's framework
  const char* gpu;        // catalog GPU
  RecipeLayout layout;
  const char* recompute_modules[3];  // nullptr-terminated; none: the recipe does not recompute
  const char* moe_dispatcher;        // alltoall / flex; nullptr: not set by the recipe
  bool ep_comm_overlap;              // Megatron-Core's overlap_moe_expert_parallel_comm
  const char* source;
};
// The recipe for (catalog model, framework, GPU) whose layout the run's is; nullptr if none is known.
const RecipePlan* recipe_plan(const std::string& model, const std::string& framework, const std::string& gpu, const RecipeLayout& run);

// Multi-token-prediction depths of a run of `known` (a catalog model with them) under `framework`,
// and why. The record's own FLOP count settles it where it states model TFLOP/s and tokens/s: their
// ratio is the publisher's FLOPs per token, which Megatron counts with the MTP depths and causal
// attention halved; the depth count (0 or the model's) whose count it is within 2% of is the
// run's (half the gap between the two: one DeepSeek-V3 depth is 4% of its count; the published
// rows sit within 0.5% of one). Otherwise Megatron-family recipes keep the model's depths (Megatron-Bridge's DeepSeek-V3
// recipes: mtp_num_layers 1) and other frameworks none. nullopt: the model has none.
struct MtpChoice {
  int64_t depths = 0;
  std::string why;
};
std::optional<MtpChoice> run_mtp_layers(const ModelSpec& known, const std::string& framework, const nlohmann::json& run);

// Megatron-Bridge's pipeline layout for a catalog model over pp x vpp virtual stages (transformer
// layers per virtual stage, model order), with its source; nullptr where the recipe sets none.
struct RecipeLayoutMap {
  const char* model;
  int64_t virtual_stages;
  std::vector<int64_t> layers;
  const char* source;
};
const RecipeLayoutMap* recipe_pipeline_layout(const std::string& model, const std::string& framework, int64_t virtual_stages);

}  // namespace trainsim
