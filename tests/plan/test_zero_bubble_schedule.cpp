// Zero Bubble schedules: every pass once and in order, the memory limit, and the bubbles of the
// handcrafted schedules (Qi et al. 2024, Table 1) as bounds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "model/model_catalog.hpp"
#include "plan/zero_bubble_schedule.hpp"
#include "tests/plan/pipeline_replay.hpp"

using namespace trainsim;
using trainsim::test::longest_span;

TEST_CASE("a Zero Bubble schedule runs every F, B and W once, B after F and W after B, within its memory limit") {
  ZeroBubbleCosts c;
  c.weight_retained = 0.9;
  for (Schedule kind : {Schedule::kZeroBubble1p, Schedule::kZeroBubble2p}) {
    const PipelineSchedule s = make_zero_bubble_schedule(kind, 6, 20, c);
    for (int64_t st = 0; st < 6; ++st) {
      std::map<std::pair<int, int64_t>, size_t> at;
      const auto& steps = s.steps[static_cast<size_t>(st)];
      REQUIRE(steps.size() == 60);
      for (size_t i = 0; i < steps.size(); ++i) at[{static_cast<int>(steps[i].kind), steps[i].micro_batch}] = i;
      REQUIRE(at.size() == 60);
      for (int64_t mb = 0; mb < 20; ++mb) {
        CHECK(at[{0, mb}] < at[{1, mb}]);
        CHECK(at[{1, mb}] < at[{2, mb}]);
      }
      const double limit = kind == Schedule::kZeroBubble2p ? 12.0 : 6.0;
      CHECK(peak_pending_micro_batches(s, st, c.weight_retained) <= limit + 1e-9);
    }
  }
}

TEST_CASE("Zero Bubble's bubbles: ZB-1p within ZB-H1's (p - 1)(F + B - W), ZB-2p within ZB-H2's, both below 1F1B's") {
  const double f = 1.0, b = 1.0, w = 1.0;
  const int64_t p = 8, m = 24;
  ZeroBubbleCosts c;
  const double one_f_one_b = static_cast<double>(m + p - 1) * (f + b + w);  // (p - 1)(F + B + W) of bubble
  const double ideal = static_cast<double>(m) * (f + b + w);
  const double zb1 = longest_span(make_zero_bubble_schedule(Schedule::kZeroBubble1p, p, m, c), f, b, w);
  const double zb2 = longest_span(make_zero_bubble_schedule(Schedule::kZeroBubble2p, p, m, c), f, b, w);
  CHECK(zb1 <= ideal + static_cast<double>(p - 1) * (f + b - w) + 1e-9);
  CHECK(zb2 <= ideal + static_cast<double>(p - 1) * std::max(0.0, f + b - 2.0 * w) + 1e-9);
  CHECK(zb2 <= zb1);
  CHECK(zb1 < one_f_one_b);
  // W must not be run before its B, nor make F wait past the memory limit: with heavy W the
  // schedule still completes.
  CHECK(longest_span(make_zero_bubble_schedule(Schedule::kZeroBubble1p, p, m, ZeroBubbleCosts{1.0, 1.0, 3.0, 0.1, 0.95}), 1.0,
                 1.0, 3.0) > 0.0);
}

TEST_CASE("the activation kept for W: 32h of 34h + 5as, the scores only with unfused attention") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p;
  p.attention = AttentionKernel::kFlash;
  CHECK(zero_bubble_weight_retained(m, p) == Approx(32.0 / 34.0));
  p.attention = AttentionKernel::kUnfused;
  const double h = static_cast<double>(m.hidden);
  CHECK(zero_bubble_weight_retained(m, p) == Approx(32.0 * h / (34.0 * h + 5.0 * m.heads * m.seq_len)));
  CHECK_THROWS(make_zero_bubble_schedule(Schedule::k1F1B, 4, 8, ZeroBubbleCosts{}));
  CHECK_THROWS(make_zero_bubble_schedule(Schedule::kZeroBubble1p, 4, 8, ZeroBubbleCosts{0.0, 1.0, 1.0, 0.0, 0.9}));
}
