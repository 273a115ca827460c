// Pipeline schedules as pure data: for each pipeline stage (rank), the ordered list of forward
// and backward steps it runs, each naming a micro-batch and a model chunk (virtual stage on that
// rank). GPipe (all forwards, then all backwards), 1F1B (PipeDream-Flush, Narayanan et al. 2021
// §2.2.1) and interleaved 1F1B (Megatron-LM, §2.2.2). No timing here: sim/ times the steps.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/parallel_plan.hpp"

namespace trainsim {

// kBackward is the whole backward, or with a Zero Bubble schedule only the input gradient (B),
// the weight gradient (W) then being a kWeightGrad step of its own.
enum class StepKind { kForward, kBackward, kWeightGrad };

struct PipelineStep {
  StepKind kind = StepKind::kForward;
  int64_t micro_batch = 0;  // 0 .. micro_batches-1
  int64_t chunk = 0;        // 0 .. chunks-1; chunk c on stage i is virtual stage c*stages + i
};

struct PipelineSchedule {
  Schedule kind = Schedule::k1F1B;
  int64_t stages = 1;         // p
  int64_t chunks = 1;         // v (1 unless interleaved; 2 with ZB-V)
  int64_t micro_batches = 1;  // m
  std::vector<std::vector<PipelineStep>> steps;  // steps[stage] in execution order

  // The virtual stage (0 .. p*v-1) a step of `stage` runs: chunk * stages + stage, or with ZB-V's
  // V placement 2p - 1 - stage for chunk 1 (place_of_virtual_stage).
  int64_t virtual_stage(int64_t stage, int64_t chunk) const {
    return virtual_stage_at(v_placement(kind), stages, stage, chunk);
  }
};

// Throws InputError when the combination is impossible (e.g. interleaved with m % p != 0).
PipelineSchedule make_pipeline_schedule(Schedule kind, int64_t stages, int64_t chunks, int64_t micro_batches);

// Largest number of (micro-batch, chunk) forwards whose backward has not run yet, over the
// stage's step list; with `chunk` >= 0, of that chunk's only.
int64_t max_in_flight(const PipelineSchedule& schedule, int64_t stage, int64_t chunk = -1);

}  // namespace trainsim
