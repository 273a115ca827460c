// The thread's current op clock (kernels/cpu/op_clock.hpp).
#include "kernels/cpu/op_clock.hpp"

namespace trainsim::cpu {

OpClock*& current_op_clock() {
  thread_local OpClock* clock = nullptr;
  return clock;
}

}  // namespace trainsim::cpu
