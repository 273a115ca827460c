// Published models the published-run format cannot describe, known by name: which catalog model a
// run's model block is (its architecture: multi-head latent attention, dense first layers, head
// width), and what a framework's recipe for that model runs that a row does not state. In: a run's
// model block, framework and GPU. Out: catalog entries and recipe facts, each with its source.
// The filling of a run's JSON and the record of every default stay in sim/published_runs.cpp.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/model_spec.hpp"

namespace trainsim {

// The catalog model a run's model block names (in any case, or by a source's name for it:
// "DeepSeek-V3-671B" -> deepseek-v3) with the same layers, hidden width and heads; nullptr if none.
const ModelSpec* catalog_model_of(const nlohmann::json& model);

// A framework recipe's selective recomputation for a catalog model on a GPU.
struct RecipePlan {
  const char* model;      // catalog name
  const char* framework;  // the run's framework
  const char* gpu;        // catalog GPU
  const char* recompute_modules[3];
  const char* source;
};
// The recipe for (catalog model, framework, GPU); nullptr if none is known.
const RecipePlan* recipe_plan(const std::string& model, const std::string& framework, const std::string& gpu);

}  // namespace trainsim
