// glibc settings for runtime/host_allocator.hpp (mallopt(3)).
#include "runtime/host_allocator.hpp"

#include <malloc.h>

#include "common/errors.hpp"

namespace trainsim::cpu {

void keep_freed_memory_in_process() {
  // M_MMAP_MAX 0: every block comes from the heap (a freed mmap'ed block goes back to the kernel);
  // M_TRIM_THRESHOLD -1: the heap's free top is never given back (mallopt(3): -1 disables trimming).
  if (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, -1) != 1) {
    throw DeviceError("mallopt refused the CPU runtime's allocator settings (M_MMAP_MAX 0, M_TRIM_THRESHOLD -1)");
  }
}

}  // namespace trainsim::cpu
