// Device memory of the CUDA runtime with byte accounting. Every tensor the runtime allocates
// (parameters, gradients, optimizer states, activations, workspaces) is one cudaMalloc through a
// DeviceArena, which keeps the current and peak bytes: the figure the measurement reports as
// memory_peak_gib. The device's own view (cudaMemGetInfo: also the CUDA context, NCCL and cuBLASLt
// buffers, and other processes on the same GPU) is sampled alongside. Not a sub-allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace trainsim::cuda {

class DeviceArena {
 public:
  // DeviceError naming `what`, the size and what is held already when cudaMalloc fails.
  void* allocate(size_t bytes, const std::string& what);
  void release(void* ptr, size_t bytes) noexcept;

  size_t current_bytes() const { return current_bytes_; }
  size_t peak_bytes() const { return peak_bytes_; }
  // cudaMemGetInfo now: keeps the largest total - free seen.
  void sample_device();
  size_t device_used_peak_bytes() const { return device_used_peak_bytes_; }
  size_t device_total_bytes() const { return device_total_bytes_; }

 private:
  size_t current_bytes_ = 0, peak_bytes_ = 0;
  size_t device_used_peak_bytes_ = 0, device_total_bytes_ = 0;
};

// `count` elements of T on the device, owned; released through the arena that made it.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceArena& arena, int64_t count, const std::string& what)
      : arena_(&arena), count_(count),
        data_(count > 0 ? static_cast<T*>(arena.allocate(static_cast<size_t>(count) * sizeof(T), what)) : nullptr) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      arena_ = std::exchange(o.arena_, nullptr);
      count_ = std::exchange(o.count_, 0);
      data_ = std::exchange(o.data_, nullptr);
    }
    return *this;
  }

  T* data() const { return data_; }
  int64_t count() const { return count_; }
  size_t bytes() const { return static_cast<size_t>(count_) * sizeof(T); }
  void reset() noexcept {
    if (data_ != nullptr) arena_->release(data_, bytes());
    data_ = nullptr;
    count_ = 0;
  }

 private:
  DeviceArena* arena_ = nullptr;
  int64_t count_ = 0;
  T* data_ = nullptr;
};

}  // namespace trainsim::cuda
