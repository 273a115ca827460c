// `trainsim model`: parameter counts, FLOPs and memory per GPU of one model under one plan, as a
// readable table or as `trainsim.model` JSON.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/flops.hpp"
#include "model/model_spec.hpp"
#include "model/param_count.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/rank_memory.hpp"
#include "reports/batch_echo.hpp"
#include "sim/device_memory.hpp"

namespace trainsim {

struct ModelReport {
  ModelSpec model;
  ParallelPlan plan;
  ParamCounts params;
  FlopsPerToken flops;
  double model_flops_per_iteration = 0;
  double hardware_flops_per_iteration = 0;
  RankMemory memory;
  BatchEcho batch;
  // With --gpu or --cluster: the rank using the most device memory and whether it fits.
  struct Fit {
    std::string gpu;
    double capacity_gib = 0;
    DevicePeak device;
    bool fits = true;
  };
  std::optional<Fit> fit;
};

// The plan must already be valid for the model. `batch` echoes its global batch and sequence.
ModelReport build_model_report(const ModelSpec& model, const ParallelPlan& plan, BatchEcho batch = {});
// The device memory of every rank on `hardware` (docs/cost-model.md "Device memory"), judged as
// predict judges it.
void add_device_fit(ModelReport& report, const Hardware& hardware, double allocator_reserve_fraction);
std::string render_model_table(const ModelReport& report);
nlohmann::ordered_json model_report_json(const ModelReport& report);

}  // namespace trainsim
