// Per-op timing of the CPU runtime, cheap enough to leave on: a ScopedOpTimer around an op adds
// its wall time to the thread's current OpClock under the op's category (common/op_category.hpp,
// the vocabulary predict prices), in the forward or backward column the trainer has set. With no
// clock installed (the calibrator, the tests) a timer costs one null check. Timers do not nest:
// each wraps one leaf op; what a compute phase spends outside them is the category "other".
#pragma once

#include <chrono>

#include "common/op_category.hpp"

namespace trainsim::cpu {

struct OpClock {
  OpCategoryTimes seconds;
  bool backward = false;  // which column timed ops go to
  void add(OpCategory c, double s) { (backward ? seconds.backward_s : seconds.forward_s)[static_cast<size_t>(c)] += s; }
};

// The clock this thread's timed ops add to; nullptr when nobody is timing.
OpClock*& current_op_clock();

class ScopedOpTimer {
 public:
  explicit ScopedOpTimer(OpCategory category) : clock_(current_op_clock()), category_(category) {
    if (clock_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedOpTimer() {
    if (clock_ != nullptr) clock_->add(category_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  OpClock* clock_;
  OpCategory category_;
  std::chrono::steady_clock::time_point start_;
};

// Runs `op` under a timer of `category` and returns what it returns.
template <class F>
decltype(auto) timed_op(OpCategory category, F&& op) {
  const ScopedOpTimer timer(category);
  return op();
}

}  // namespace trainsim::cpu
