// One training iteration of one plan on one cluster: lowers the plan, prices every op with a
// CostModel, builds the task graph of one pipeline (TP ranks and DP replicas are symmetric, so
// one rank per stage stands for all), runs it on the event engine, and reports the iteration
// time, its breakdown, throughput, MFU/HFU, memory per GPU and cost. ZeRO-3 steps run layer by
// layer (each layer's gather one layer ahead, its reduce-scatter after its backward).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/op_category.hpp"
#include "common/phase_breakdown.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/rank_memory.hpp"
#include "sim/cost_model.hpp"
#include "sim/device_memory.hpp"
#include "sim/event_engine.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/simulation_trace.hpp"
#include "sim/step_cost.hpp"

namespace trainsim {

struct Prediction {
  ModelSpec model;
  ParallelPlan plan;
  Hardware hardware;
  std::string cost_model;
  std::vector<std::string> extrapolated;  // ops priced outside a profile's measurements
  bool fits = true;
  std::string infeasible_reason;
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  RankMemory memory;
  // What the device reports on the rank that uses the most (allocator reserve, CUDA context,
  // workspaces, NCCL buffers beside the tensors): `fits` is judged on its device_used_bytes.
  DevicePeak device;
  double memory_capacity_gib = 0;
  PhaseBreakdown breakdown;  // where the critical stage's time goes: its six parts sum to the iteration time
  int64_t critical_stage = 0;
  double usd_per_iteration = 0;
  SimulationTrace trace;  // filled when requested
  // Per pipeline stage, seconds per op category (sim/op_category_times.hpp); filled when
  // SimulationOptions::op_categories asks (predict does; a search does not pay for it).
  std::vector<OpCategoryTimes> op_categories;
  // The ops one transformer layer issues: forward, backward, recomputed (the host's count).
  int64_t layer_ops_forward = 0, layer_ops_backward = 0, layer_ops_recompute = 0;
};

struct SimulationOptions {
  bool keep_trace = false;
  double dp_bucket_params = kDpBucketParams;
  bool op_categories = false;  // also price each op category per stage, from the same lowered work
};

// The plan must be valid for the model, and plan.gpus() == hardware.gpus.
Prediction predict_iteration(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                             const CostModel& cost, const SimulationOptions& options = {});

}  // namespace trainsim
