// ZB-V: the V placement of two chunks per rank, every pass once and in dependency order, 1F1B's
// memory, and a bubble near zero with F = B = W (Qi et al. 2024 §6; the authors' comparison).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "plan/parallel_plan.hpp"
#include "plan/zero_bubble_schedule.hpp"
#include "tests/plan/pipeline_replay.hpp"

using namespace trainsim;
using trainsim::test::longest_span;

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
