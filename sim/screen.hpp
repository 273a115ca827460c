// The closed-form screen of `trainsim search`: the same lowered and priced steps as the event
// simulator, combined by formula instead of by events — pipeline (m-1) x slowest stage + fill and
// drain (interleaved: bubble / v), DP reduction exposed beyond the last backward, ZeRO-3 gathers
// against compute, optimizer. Microseconds per plan; its error against the simulator is measured
// by tests/sim/test_screen.cpp.
#pragma once

#include "model/model_spec.hpp"
#include "plan/rank_memory.hpp"
#include "plan/parallel_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

struct ScreenEstimate {
  double iteration_time_s = 0;
  double memory_peak_bytes = 0;
  int64_t memory_peak_stage = 0;
  double device_used_bytes = 0;  // the peak stage's tensors + CUDA context, workspace, NCCL buffers
  bool fits = true;
};

// The plan must be valid for the model and match hardware.gpus.
ScreenEstimate screen_plan(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                           const CostModel& cost);

// Only whether the plan fits, as screen_plan judges it (no iteration time): from the rank memory
// alone, without lowering and pricing the ops, so a search prunes what does not fit (most of a
// large model's candidates) at a fraction of a screen.
ScreenEstimate screen_fit(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware);
ScreenEstimate screen_fit(const RankMemory& memory, const ParallelPlan& plan, const Hardware& hardware);

}  // namespace trainsim
