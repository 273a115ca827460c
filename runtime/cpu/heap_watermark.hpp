// The runtime's own memory: bytes the allocator hands out (heap and mmap'ed blocks, glibc
// mallinfo2) above a baseline taken before the model is built, sampled where the runtime's
// memory peaks (after each forward, after the optimizer). This is the figure comparable with
// predict's memory per GPU (weights, gradients, optimizer states, activations); the process's
// resident set also holds the program, MPI's buffers and the corpus.
#pragma once

#include <malloc.h>

#include <algorithm>
#include <cstddef>

namespace trainsim::cpu {

class HeapWatermark {
 public:
  void reset() {
    baseline_ = in_use();
    peak_ = 0;
  }
  void sample() { peak_ = std::max(peak_, in_use() > baseline_ ? in_use() - baseline_ : 0); }
  size_t peak_bytes() const { return peak_; }

 private:
  static size_t in_use() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
  }
  size_t baseline_ = 0, peak_ = 0;
};

}  // namespace trainsim::cpu
