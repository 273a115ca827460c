// Published training runs (`trainsim.published_runs` versions 1 and 2,
// shared/validation/published-runs.json): model, hardware, plan, framework and what was measured.
// `null` fields take documented defaults (docs/validation.md; framework-dependent ones from
// plan/framework_preset.hpp) and each run records which defaults it used. A run the simulator
// cannot simulate (a GPU not in the catalog, a layout not modeled yet) is read all the same and
// carries the reason: validate lists it as unsupported and goes on. A malformed file (wrong types,
// unknown keys, a run with no throughput and no out-of-memory flag) is refused whole, every
// problem listed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

struct PublishedRun {
  std::string id, group, source;
  std::string framework;             // as written ("" = not stated); the preset is framework_preset(framework)
  std::vector<std::string> options;  // implementation choices (INTERFACE.md), as written
  std::vector<std::string> options_not_modeled;  // the subset the simulator does not model
  ModelSpec model;
  std::string gpu;
  int64_t gpus = 0;
  int64_t gpus_per_node = 8;
  double inter_node_gbps_per_gpu = 200;
  ParallelPlan plan;
  double measured_tokens_per_s_per_gpu = 0;  // 0 for a run that went out of memory
  std::optional<double> measured_iteration_s, measured_model_tflops_per_gpu, measured_memory_gib;
  // reserved_max (PyTorch's peak reserved), nvidia_smi_max (the device's used memory),
  // reported_peak (the source's peak, method not stated), "" (not stated).
  std::string memory_kind;
  bool measured_oom = false;
  std::vector<std::string> defaults_used;  // "plan.micro_batch=1", ...
  std::string unsupported;                 // why it cannot be simulated; "" = it can

  bool supported() const { return unsupported.empty(); }
};

// Loads every run (all format problems reported together, exit 2 at the CLI).
std::vector<PublishedRun> load_published_runs(const std::string& path);

}  // namespace trainsim
