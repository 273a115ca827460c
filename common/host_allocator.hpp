// The allocator regime of the CPU runtime and of the CPU calibrator: memory a process frees stays
// in it (glibc malloc: no mmap'ed blocks, no trimming of the heap), so an iteration reuses the
// previous iteration's pages instead of returning them to the kernel and faulting fresh zeroed
// pages in again, as a GPU framework's caching allocator keeps its blocks. Without it the runtime
// took ~7,000 page faults per iteration on gpt-tiny (micro-batch 4) that no calibrated kernel
// paid, and a page fault costs 1-4 us on one VM and far more on others (nested paging), so the
// same profile predicted the runtime on one machine and missed it by 3.4x on another.
#pragma once

namespace trainsim {

// Idempotent; call before the work to be timed. Throws DeviceError if the allocator refuses.
void keep_freed_memory_in_process();

}  // namespace trainsim
