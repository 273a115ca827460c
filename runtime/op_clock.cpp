// The thread's current op clock (runtime/op_clock.hpp).
#include "runtime/op_clock.hpp"

namespace trainsim::cpu {

OpClock*& current_op_clock() {
  thread_local OpClock* clock = nullptr;
  return clock;
}

}  // namespace trainsim::cpu
