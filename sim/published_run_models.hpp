// Published models the published-run format cannot describe, known by name: which catalog model a
// run's model block is (its architecture: multi-head latent attention, dense first layers, head
// width), and what a framework's recipe for that model runs that a row does not state. In: a run's
// model block, framework and GPU. Out: catalog entries and recipe facts, each with its source.
// The filling of a run's JSON and the record of every default stay in sim/published_runs.cpp.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace trainsim
