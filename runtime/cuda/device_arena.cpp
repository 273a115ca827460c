// DeviceArena: cudaMalloc / cudaFree with current and peak byte counts; see device_arena.hpp.
#include "runtime/cuda/device_arena.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

namespace {
std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}
}  // namespace

void* DeviceArena::allocate(size_t bytes, const std::string& what) {
  void* ptr = nullptr;
  check_cuda(cudaMalloc(&ptr, bytes), "cudaMalloc(" + gib(bytes) + " for " + what + "; the runtime holds " +
                                          gib(current_bytes_) + " already)");
  current_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, current_bytes_);
  return ptr;
}

void DeviceArena::release(void* ptr, size_t bytes) noexcept {
  cudaFree(ptr);  // not checked: called from destructors, also while unwinding from a device error
  current_bytes_ -= std::min(bytes, current_bytes_);
}

void DeviceArena::sample_device() {
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  device_total_bytes_ = total_bytes;
  device_used_peak_bytes_ = std::max(device_used_peak_bytes_, total_bytes - free_bytes);
}

}  // namespace trainsim::cuda
