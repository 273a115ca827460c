// glibc settings for common/host_allocator.hpp (mallopt(3)).
#include "common/host_allocator.hpp"

#include <malloc.h>

#include "common/errors.hpp"

namespace trainsim {

// AddressSanitizer replaces glibc's malloc with its own, which has no such settings: its mallopt
// returns 0. The sanitizer build (cmake/TrainsimSanitize.cmake) keeps the allocator it has.
#if defined(__SANITIZE_ADDRESS__)
#define TRAINSIM_ASAN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRAINSIM_ASAN_ALLOCATOR 1
#endif
#endif

void keep_freed_memory_in_process() {
#ifdef TRAINSIM_ASAN_ALLOCATOR
  return;
#endif
  // M_MMAP_MAX 0: every block comes from the heap (a freed mmap'ed block goes back to the kernel);
  // M_TRIM_THRESHOLD -1: the heap's free top is never given back (mallopt(3): -1 disables trimming).
  if (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, -1) != 1) {
    throw DeviceError("mallopt refused the CPU runtime's allocator settings (M_MMAP_MAX 0, M_TRIM_THRESHOLD -1)");
  }
}

}  // namespace trainsim
