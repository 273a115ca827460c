// Replays a pipeline schedule with uniform pass times (tests of the Zero Bubble schedules).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "plan/pipeline_schedule.hpp"

namespace trainsim::test {

using Key = std::tuple<int, int64_t, int64_t>;  // (kind, virtual stage, micro-batch)

// Times a schedule with uniform pass times (a chunk's) and no transfer time, by virtual stage: F after
// the previous virtual stage's F, B after the next one's B (the last's after its own F), W after
// its own B. REQUIREs that the step lists run to the end (no pass waits on one that never runs);
// returns the longest rank span (Zero Bubble's optimizer post-validation).
inline double longest_span(const PipelineSchedule& s, double f, double b, double w) {
  const int64_t last = s.stages * s.chunks - 1;
  std::map<Key, double> end;
  std::vector<size_t> next(static_cast<size_t>(s.stages), 0);
  std::vector<double> free_at(static_cast<size_t>(s.stages), 0.0), first_start(static_cast<size_t>(s.stages), -1.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t st = 0; st < s.stages; ++st) {
      const auto& steps = s.steps[static_cast<size_t>(st)];
      for (size_t& i = next[static_cast<size_t>(st)]; i < steps.size(); ++i) {
        const PipelineStep& step = steps[i];
        const int64_t vs = s.virtual_stage(st, step.chunk);
        Key dep{0, vs - 1, step.micro_batch};
        if (step.kind == StepKind::kBackward) dep = vs == last ? Key{0, vs, step.micro_batch} : Key{1, vs + 1, step.micro_batch};
        if (step.kind == StepKind::kWeightGrad) dep = {1, vs, step.micro_batch};
        const bool first_forward = step.kind == StepKind::kForward && vs == 0;
        if (!first_forward && end.count(dep) == 0) break;
        const double d = step.kind == StepKind::kForward ? f : step.kind == StepKind::kBackward ? b : w;
        const double start = std::max(free_at[static_cast<size_t>(st)], first_forward ? 0.0 : end[dep]);
        if (first_start[static_cast<size_t>(st)] < 0) first_start[static_cast<size_t>(st)] = start;
        free_at[static_cast<size_t>(st)] = start + d;
        end[{static_cast<int>(step.kind), vs, step.micro_batch}] = start + d;
        progress = true;
      }
    }
  }
  double span = 0.0;
  for (int64_t st = 0; st < s.stages; ++st) {
    REQUIRE(next[static_cast<size_t>(st)] == s.steps[static_cast<size_t>(st)].size());
    span = std::max(span, free_at[static_cast<size_t>(st)] - first_start[static_cast<size_t>(st)]);
  }
  return span;
}

}  // namespace trainsim::test
