// ZB-V: the V placement of two chunks per rank, every pass once and in dependency order, 1F1B's
// memory, and a bubble near zero with F = B = W (Qi et al. 2024 §6; the authors' comparison).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "plan/parallel_plan.hpp"
#include "plan/zero_bubble_schedule.hpp"

using namespace trainsim;

namespace {

using Key = std::tuple<int, int64_t, int64_t>;  // (kind, virtual stage, micro-batch)

// Times a schedule with uniform chunk pass times and no transfer time, by virtual stage: F after
// the previous virtual stage's F, B after the next one's B (the last's after its own F), W after
// its own B. REQUIREs that the step lists run to the end (no pass waits on one that never runs);
// returns the longest rank span (Zero Bubble's optimizer post-validation).
double longest_span(const PipelineSchedule& s, double f, double b, double w) {
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

}  // namespace

TEST_CASE("the V placement: rank i holds virtual stages i and 2p - 1 - i, the first rank both ends") {
  const int64_t p = 4;
  for (int64_t stage = 0; stage < p; ++stage) {
    CHECK(virtual_stage_at(true, p, stage, 0) == stage);
    CHECK(virtual_stage_at(true, p, stage, 1) == 2 * p - 1 - stage);
    CHECK(virtual_stage_at(false, p, stage, 1) == p + stage);  // Megatron's interleaving
  }
  for (int64_t vs = 0; vs < 2 * p; ++vs) {
    const ChunkPlace v = place_of_virtual_stage(true, p, vs);
    CHECK(virtual_stage_at(true, p, v.stage, v.chunk) == vs);
    const ChunkPlace loop = place_of_virtual_stage(false, p, vs);
    CHECK(virtual_stage_at(false, p, loop.stage, loop.chunk) == vs);
  }
  CHECK(place_of_virtual_stage(true, p, 2 * p - 1).stage == 0);
  CHECK(place_of_virtual_stage(true, p, p - 1).stage == p - 1);
  CHECK(place_of_virtual_stage(true, p, p).stage == p - 1);  // the turn of the V: no transfer
}

TEST_CASE("ZB-V runs every F, B and W of both chunks once, in dependency order, within 1F1B's memory") {
  ZeroBubbleCosts c;
  c.weight_retained = 0.9;
  for (int64_t p : {int64_t{2}, int64_t{4}, int64_t{6}}) {
    for (int64_t m : {int64_t{1}, int64_t{3}, 2 * p, int64_t{20}}) {
      const PipelineSchedule s = make_zero_bubble_schedule(Schedule::kZeroBubbleV, p, m, c);
      REQUIRE(s.chunks == 2);
      for (int64_t st = 0; st < p; ++st) {
        std::map<std::tuple<int, int64_t, int64_t>, size_t> at;  // (kind, chunk, micro-batch) -> position
        const auto& steps = s.steps[static_cast<size_t>(st)];
        REQUIRE(steps.size() == static_cast<size_t>(6 * m));
        for (size_t i = 0; i < steps.size(); ++i) at[{static_cast<int>(steps[i].kind), steps[i].chunk, steps[i].micro_batch}] = i;
        REQUIRE(at.size() == static_cast<size_t>(6 * m));
        for (int64_t mb = 0; mb < m; ++mb) {
          CHECK(at[{0, 0, mb}] < at[{0, 1, mb}]);  // the V: chunk 0's forward first
          CHECK(at[{1, 1, mb}] < at[{1, 0, mb}]);  // and chunk 1's backward first
          for (int64_t chunk : {0, 1}) CHECK(at[{1, chunk, mb}] < at[{2, chunk, mb}]);
        }
        // 1F1B's first-stage peak: p micro-batches of a whole stage (2p chunk activations).
        CHECK(peak_pending_micro_batches(s, st, c.weight_retained) <= static_cast<double>(std::min(p, m)) + 1e-9);
      }
      CHECK(longest_span(s, 1.0, 1.0, 1.0) > 0.0);  // runs to the end
    }
  }
}

TEST_CASE("ZB-V's bubble: near zero with F = B = W, below ZB-1p's and 1F1B's at the same memory") {
  const int64_t p = 8, m = 32;
  ZeroBubbleCosts chunk;  // one chunk's passes: half a stage
  chunk.forward_s = chunk.input_grad_s = chunk.weight_grad_s = 0.5;
  const double ideal = static_cast<double>(m) * 3.0;  // F + B + W of a whole stage per micro-batch
  const double zbv = longest_span(make_zero_bubble_schedule(Schedule::kZeroBubbleV, p, m, chunk), 0.5, 0.5, 0.5);
  const double zb1 = ideal + static_cast<double>(p - 1) * 1.0;  // ZB-H1: (p - 1)(F + B - W)
  const double one_f_one_b = ideal + static_cast<double>(p - 1) * 3.0;
  CHECK(zbv >= ideal - 1e-9);
  CHECK(zbv < zb1);
  CHECK(zbv < one_f_one_b);
  CHECK((zbv - ideal) / ideal < 0.05);  // the authors' "zero bubble" at F = B = W, within 5%
  // Heavy W or heavy F still completes.
  CHECK(longest_span(make_zero_bubble_schedule(Schedule::kZeroBubbleV, p, m, ZeroBubbleCosts{0.5, 0.5, 1.5, 0.05, 0.95}), 0.5, 0.5, 1.5) > 0.0);
  CHECK(longest_span(make_zero_bubble_schedule(Schedule::kZeroBubbleV, p, m, ZeroBubbleCosts{1.5, 0.5, 0.3, 0.05, 0.95}), 1.5, 0.5, 0.3) > 0.0);
}

TEST_CASE("ZB-V needs two ranks or more") {
  CHECK_THROWS_WITH(make_zero_bubble_v_schedule(1, 4, ZeroBubbleCosts{}), Catch::Contains("stages >= 2"));
}
