// Published training runs (`trainsim.published_runs`, shared/validation/published-runs.json):
// model, hardware, plan and what was measured. `null` fields take documented defaults
// (docs/validation.md) and each run records which defaults it used.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

struct PublishedRun {
  std::string id, group, source;
  ModelSpec model;
  std::string gpu;
  int64_t gpus = 0;
  int64_t gpus_per_node = 8;
  double inter_node_gbps_per_gpu = 200;
  ParallelPlan plan;
  double measured_tokens_per_s_per_gpu = 0;
  std::optional<double> measured_iteration_s, measured_model_tflops_per_gpu, measured_memory_gib;
  bool measured_oom = false;
  std::vector<std::string> defaults_used;  // "plan.micro_batch=1", ...
};

// Loads and validates every run (all problems reported together, exit 2 at the CLI).
std::vector<PublishedRun> load_published_runs(const std::string& path);

}  // namespace trainsim
