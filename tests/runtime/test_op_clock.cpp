// The runtime's per-op timing: nothing is recorded without a clock, timed ops land in the column
// the trainer set, timed_op passes its op's result through, and medians are taken per entry.
#include <catch2/catch.hpp>

#include "common/measurement.hpp"
#include "kernels/cpu/op_clock.hpp"

using namespace trainsim;
using namespace trainsim::cpu;

namespace {
void spin_for(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}
}  // namespace

TEST_CASE("ops are timed into the current clock's forward or backward column") {
  REQUIRE(current_op_clock() == nullptr);
  { const ScopedOpTimer untimed(OpCategory::kNorm); }  // no clock: nothing to record, no crash
  OpClock clock;
  current_op_clock() = &clock;
  { const ScopedOpTimer t(OpCategory::kGemmFc1); spin_for(1e-3); }
  clock.backward = true;
  const int value = timed_op(OpCategory::kGemmFc1, [] {
    spin_for(2e-3);
    return 42;
  });
  current_op_clock() = nullptr;
  CHECK(value == 42);
  const size_t fc1 = static_cast<size_t>(OpCategory::kGemmFc1);
  CHECK(clock.seconds.forward_s[fc1] >= 1e-3);
  CHECK(clock.seconds.backward_s[fc1] >= 2e-3);
  CHECK(clock.seconds.total_s(OpCategory::kNorm) == 0);
}

TEST_CASE("per-op-category medians skip the warm-up and take each entry's median") {
  std::vector<IterationRecord> records(4);
  const size_t qkv = static_cast<size_t>(OpCategory::kGemmQkv);
  const double forward[] = {9.0, 1.0, 3.0, 2.0};  // the warm-up's 9 is left out: median of 1, 3, 2
  for (size_t i = 0; i < 4; ++i) {
    records[i].ops.forward_s[qkv] = forward[i];
    records[i].ops.backward_s[qkv] = 10.0 * static_cast<double>(i);
  }
  const OpCategoryTimes m = median_op_categories(records, 1);
  CHECK(m.forward_s[qkv] == 2.0);
  CHECK(m.backward_s[qkv] == 20.0);
}
