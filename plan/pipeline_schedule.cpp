// Pipeline schedules as step lists per stage: GPipe, 1F1B (PipeDream-Flush, Narayanan et al. 2021
// §2.2.1; Megatron-LM `forward_backward_pipelining_without_interleaving`) and interleaved 1F1B
// (Narayanan et al. 2021 §2.2.2; Megatron-LM `forward_backward_pipelining_with_interleaving`).
// Both 1F1B variants share one shape: warm-up forwards, steady 1 forward / 1 backward, cool-down
// backwards; they differ in the warm-up count and in which (micro-batch, chunk) step k runs.
#include "plan/pipeline_schedule.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "common/errors.hpp"
#include "common/problem_list.hpp"

namespace trainsim {

namespace {

std::string s(int64_t x) { return std::to_string(x); }

// Every problem with the combination, reported together.
void validate_schedule(Schedule kind, int64_t stages, int64_t chunks, int64_t micro_batches) {
  ProblemList problems;
  if (stages < 1) problems.add("pipeline stages (" + s(stages) + ") must be >= 1");
  if (micro_batches < 1) problems.add("micro_batches (" + s(micro_batches) + ") must be >= 1");
  if (chunks < 1) problems.add("chunks (" + s(chunks) + ") must be >= 1");
  if (is_zero_bubble(kind)) {
    problems.add(std::string("the ") + to_string(kind) + " schedule is built from the pass times (make_zero_bubble_schedule)");
  }
  if (kind != Schedule::kInterleaved && chunks != 1) {
    problems.add(std::string("the ") + to_string(kind) + " schedule runs one model chunk per stage: chunks (" +
                 s(chunks) + ") must be 1; use the interleaved schedule for chunks > 1");
  }
  if (kind == Schedule::kInterleaved) {
    if (stages == 1) problems.add("the interleaved schedule needs pipeline stages p > 1 (p is 1)");
    if (chunks == 1) {
      problems.add("the interleaved schedule needs chunks v > 1 (v is 1); use the 1f1b schedule for one chunk");
    }
    if (stages > 1 && micro_batches >= 1 && micro_batches % stages != 0) {
      problems.add("the interleaved schedule (Megatron-LM) needs micro_batches m (" + s(micro_batches) +
                   ") to be a multiple of pipeline stages p (" + s(stages) + ")");
    }
  }
  problems.throw_if_any();
}

// GPipe (Huang et al. 2019): all forwards, then all backwards, in micro-batch order.
std::vector<PipelineStep> gpipe_steps(int64_t micro_batches) {
  std::vector<PipelineStep> steps;
  for (int64_t mb = 0; mb < micro_batches; ++mb) steps.push_back({StepKind::kForward, mb, 0});
  for (int64_t mb = 0; mb < micro_batches; ++mb) steps.push_back({StepKind::kBackward, mb, 0});
  return steps;
}

// The shape Megatron-LM's two 1F1B schedules share: `warmup` forwards, then `total - warmup`
// pairs of (forward warmup + k, backward k), then the remaining backwards. `step(kind, k)` names
// the (micro-batch, chunk) of the k-th forward or backward.
template <typename StepOf>
std::vector<PipelineStep> one_f_one_b_shape(int64_t warmup, int64_t total, StepOf step) {
  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<size_t>(2 * total));
  for (int64_t k = 0; k < warmup; ++k) steps.push_back(step(StepKind::kForward, k));
  for (int64_t k = 0; k < total - warmup; ++k) {
    steps.push_back(step(StepKind::kForward, warmup + k));
    steps.push_back(step(StepKind::kBackward, k));
  }
  for (int64_t k = total - warmup; k < total; ++k) steps.push_back(step(StepKind::kBackward, k));
  return steps;
}

// 1F1B / PipeDream-Flush (Narayanan et al. 2021 §2.2.1): stage i warms up with min(p - i - 1, m)
// forwards (Megatron-LM `forward_backward_pipelining_without_interleaving`).
std::vector<PipelineStep> one_f_one_b_steps(int64_t stages, int64_t micro_batches, int64_t stage) {
  const int64_t warmup = std::min(stages - stage - 1, micro_batches);
  return one_f_one_b_shape(warmup, micro_batches, [](StepKind kind, int64_t k) {
    return PipelineStep{kind, k, 0};
  });
}

// Interleaved 1F1B (Narayanan et al. 2021 §2.2.2; Megatron-LM `get_model_chunk_id` and
// `get_microbatch_id_in_model_chunk`): steps go in groups of p micro-batches per chunk; forwards
// walk the chunks upwards, backwards downwards.
PipelineStep interleaved_step(StepKind kind, int64_t k, int64_t stages, int64_t chunks) {
  const int64_t chunk_in_order = (k / stages) % chunks;
  const int64_t chunk = kind == StepKind::kForward ? chunk_in_order : chunks - 1 - chunk_in_order;
  const int64_t micro_batch = (k / (stages * chunks)) * stages + k % stages;
  return PipelineStep{kind, micro_batch, chunk};
}

// Megatron-LM `forward_backward_pipelining_with_interleaving`: (p - i - 1) * 2 + (v - 1) * p
// warm-up forwards, capped at m * v; when m == p every forward is a warm-up forward.
std::vector<PipelineStep> interleaved_steps(int64_t stages, int64_t chunks, int64_t micro_batches, int64_t stage) {
  const int64_t total = micro_batches * chunks;
  const int64_t warmup = micro_batches == stages
                             ? total
                             : std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
  return one_f_one_b_shape(warmup, total, [stages, chunks](StepKind kind, int64_t k) {
    return interleaved_step(kind, k, stages, chunks);
  });
}

}  // namespace

PipelineSchedule make_pipeline_schedule(Schedule kind, int64_t stages, int64_t chunks, int64_t micro_batches) {
  validate_schedule(kind, stages, chunks, micro_batches);
  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.stages = stages;
  schedule.chunks = chunks;
  schedule.micro_batches = micro_batches;
  for (int64_t stage = 0; stage < stages; ++stage) {
    switch (kind) {
      case Schedule::kGpipe: schedule.steps.push_back(gpipe_steps(micro_batches)); break;
      case Schedule::k1F1B: schedule.steps.push_back(one_f_one_b_steps(stages, micro_batches, stage)); break;
      case Schedule::kInterleaved:
        schedule.steps.push_back(interleaved_steps(stages, chunks, micro_batches, stage));
        break;
      case Schedule::kZeroBubble1p:
      case Schedule::kZeroBubble2p:
      case Schedule::kZeroBubbleV: break;  // refused above
    }
  }
  return schedule;
}

int64_t max_in_flight(const PipelineSchedule& schedule, int64_t stage, int64_t chunk) {
  TRAINSIM_ASSERT(stage >= 0 && stage < static_cast<int64_t>(schedule.steps.size()),
                  "stage " + s(stage) + " outside the schedule's " + s(static_cast<int64_t>(schedule.steps.size())) +
                      " stages");
  std::set<std::pair<int64_t, int64_t>> in_flight;  // (micro-batch, chunk)
  size_t peak = 0;
  for (const PipelineStep& step : schedule.steps[static_cast<size_t>(stage)]) {
    if (chunk >= 0 && step.chunk != chunk) continue;
    if (step.kind == StepKind::kForward) {
      in_flight.insert({step.micro_batch, step.chunk});
      peak = std::max(peak, in_flight.size());
    } else if (step.kind == StepKind::kBackward) {
      in_flight.erase({step.micro_batch, step.chunk});
    }
  }
  return static_cast<int64_t>(peak);
}

}  // namespace trainsim
