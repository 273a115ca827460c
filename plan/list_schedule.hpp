// The list scheduling the Zero Bubble builders share (plan/zero_bubble_schedule.cpp,
// plan/zero_bubble_v_schedule.cpp): each of `passes` times, the stage whose next pass can start
// earliest (earliest stage first on a tie) runs it, so a decision at time t knows every pass that
// ends by t.
#pragma once

#include <cstdint>
#include <string>

#include "common/errors.hpp"
#include "plan/pipeline_schedule.hpp"

namespace trainsim {

// `z.choose(stage)` gives the stage's next pass with its `start` (infinite: none can be placed
// yet); `z.run(stage, choice, out)` places it and appends its step to `out.steps[stage]`.
template <typename Scheduler>
PipelineSchedule list_schedule(Scheduler& z, Schedule kind, int64_t stages, int64_t chunks, int64_t micro_batches,
                               int64_t passes) {
  PipelineSchedule out;
  out.kind = kind;
  out.stages = stages;
  out.chunks = chunks;
  out.micro_batches = micro_batches;
  out.steps.assign(static_cast<size_t>(stages), {});
  for (int64_t done = 0; done < passes; ++done) {
    int64_t best = -1;
    decltype(z.choose(0)) best_choice;
    for (int64_t j = 0; j < stages; ++j) {
      const auto c = z.choose(j);
      if (c.start < best_choice.start) {
        best = j;
        best_choice = c;
      }
    }
    TRAINSIM_ASSERT(best >= 0, std::string("the ") + to_string(kind) + " scheduler found no pass to run");
    z.run(best, best_choice, out);
  }
  return out;
}

}  // namespace trainsim
