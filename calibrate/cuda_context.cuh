// What every GPU measurement shares: owning device and pinned buffers, the per-GPU context
// (stream, cuBLAS handles, workspace, the runtime's Gemm, L2 size) and the timing loop: CUDA events
// around one or more calls, sampled until stable by calibrate/sampler.hpp. CUDA / cuBLAS / NCCL
// failures become DeviceError through the runtime's checks (kernels/cuda/cuda_check.cuh).
// Internal to the cuda_*.cu files (C++17, no nlohmann/json).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "calibrate/sampler.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/gemm.cuh"

namespace trainsim {

using cuda::check_cublas;
using cuda::check_cuda;
using cuda::check_nccl;

// "1.00 GiB", "64.0 MiB", "4.0 KiB": sizes in progress lines and messages.
std::string format_bytes(double bytes);

inline size_t align_up(size_t bytes, size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// cudaMalloc'ed memory on the device that was current at construction; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  void* get() const { return ptr_; }
  char* bytes_ptr() const { return static_cast<char*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
};

// Page-locked host memory (cudaMallocHost), for host <-> device copies at full speed.
class PinnedBuffer {
 public:
  PinnedBuffer(size_t bytes, const std::string& what);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A pair of CUDA events on the current device, for timing work on one stream.
class EventPair {
 public:
  EventPair();
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void record_start(cudaStream_t stream);
  void record_stop(cudaStream_t stream);
  double wait_elapsed_s();  // waits for the stop event

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// One GPU as the measurements see it. Construction makes `device` current.
struct GpuContext {
  GpuContext(int device, SamplerOptions sampler, std::function<void(const std::string&)> progress);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  void say(const std::string& line) const;
  // How many buffer sets of `set_bytes` to rotate through so that together they exceed the L2
  // cache twice over (each call then reads cold data), as many as fit in `arena_bytes`.
  int64_t rotation_sets(size_t set_bytes, size_t arena_bytes) const;
  // Times `enqueue(call)` on `stream` (`call` counts up from 0: use it to rotate buffers). A sample
  // is one call, or the mean of several back-to-back calls when one takes under 100 us.
  Timing time_calls(const std::function<void(int64_t call)>& enqueue) const;

  int device = 0;
  int compute_major = 0, compute_minor = 0;
  int sm_count = 0;
  size_t l2_bytes = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;  // for strided-batched GEMMs (the runtime's unfused attention)
  DeviceBuffer workspace;         // cuBLASLt workspace of the fp16, tf32 and fp8 GEMMs
  std::unique_ptr<cuda::Gemm> gemm;  // the runtime's bf16 GEMMs (own handle and workspace)
  SamplerOptions sampler;
  std::function<void(const std::string&)> progress;
};

// Cap on back-to-back calls per sample, and the sample length they aim for.
inline constexpr int kMaxCallsPerSample = 100;
inline constexpr double kMinSampleS = 100e-6;
// Calls per sample so that one sample lasts at least kMinSampleS, given one call's time.
int calls_per_sample(double call_s);

}  // namespace trainsim
