// `trainsim model`: parameter counts, FLOPs and memory per GPU of one model under one plan, as a
// readable table or as `trainsim.model` JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/flops.hpp"
#include "model/model_spec.hpp"
#include "model/param_count.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/rank_memory.hpp"

namespace trainsim {

struct ModelReport {
  ModelSpec model;
  ParallelPlan plan;
  ParamCounts params;
  FlopsPerToken flops;
  double model_flops_per_iteration = 0;
  double hardware_flops_per_iteration = 0;
  RankMemory memory;
};

// The plan must already be valid for the model.
ModelReport build_model_report(const ModelSpec& model, const ParallelPlan& plan);
std::string render_model_table(const ModelReport& report);
nlohmann::ordered_json model_report_json(const ModelReport& report);

}  // namespace trainsim
