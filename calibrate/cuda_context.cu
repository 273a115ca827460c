// The per-GPU context every measurement runs in, and the timing loop: warm-up calls, then CUDA
// events around one or more calls per sample until calibrate/sampler.hpp says the spread is small.
// Nothing here knows what is being measured.
#include "calibrate/cuda_context.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "common/errors.hpp"

namespace trainsim {

namespace {
constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;  // cuBLASLt's advice for Hopper: 32 MiB
constexpr double kColdL2Multiple = 2.0;                  // rotated buffers exceed the L2 this many times
constexpr int64_t kMaxRotationSets = 4096;
}  // namespace

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1073741824.0) {
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / 1073741824.0);
  } else if (bytes >= 1048576.0) {
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  } else {
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  }
  return text;
}

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
  check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
  check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc(" + format_bytes(static_cast<double>(bytes)) + " for " + what + ")");
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)), device_(other.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = other.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_ == nullptr) return;
  int current = 0;
  cudaGetDevice(&current);
  cudaSetDevice(device_);
  cudaFree(ptr_);
  cudaSetDevice(current);
  ptr_ = nullptr;
}

PinnedBuffer::PinnedBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
  check_cuda(cudaMallocHost(&ptr_, bytes),
             "cudaMallocHost(" + format_bytes(static_cast<double>(bytes)) + " for " + what + ")");
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_ != nullptr) cudaFreeHost(ptr_);
}

EventPair::EventPair() {
  check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
}

EventPair::~EventPair() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventPair::record_start(cudaStream_t stream) { check_cuda(cudaEventRecord(start_, stream), "cudaEventRecord"); }

void EventPair::record_stop(cudaStream_t stream) { check_cuda(cudaEventRecord(stop_, stream), "cudaEventRecord"); }

double EventPair::wait_elapsed_s() {
  check_cuda(cudaEventSynchronize(stop_), "waiting for timed GPU work");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

GpuContext::GpuContext(int device_index, SamplerOptions sampler_options,
                       std::function<void(const std::string&)> progress_lines)
    : device(device_index), sampler(sampler_options), progress(std::move(progress_lines)) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  check_cuda(cudaDeviceGetAttribute(&compute_major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&compute_minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  int l2 = 0;
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
  l2_bytes = static_cast<size_t>(std::max(l2, 1 << 20));
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cublas(cublasLtCreate(&lt), "cublasLtCreate");
  check_cublas(cublasCreate(&blas), "cublasCreate");
  check_cublas(cublasSetStream(blas, stream), "cublasSetStream");
  workspace = DeviceBuffer(kLtWorkspaceBytes, "the cuBLASLt workspace");
  gemm = std::make_unique<cuda::Gemm>(kLtWorkspaceBytes);
}

GpuContext::~GpuContext() {
  cudaSetDevice(device);
  cudaStreamSynchronize(stream);
  if (blas != nullptr) cublasDestroy(blas);
  if (lt != nullptr) cublasLtDestroy(lt);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void GpuContext::say(const std::string& line) const {
  if (progress) progress(line);
}

int64_t GpuContext::rotation_sets(size_t set_bytes, size_t arena_bytes) const {
  TRAINSIM_ASSERT(set_bytes > 0 && set_bytes <= arena_bytes, "a buffer set must fit its arena");
  const double wanted = std::ceil(kColdL2Multiple * static_cast<double>(l2_bytes) / static_cast<double>(set_bytes));
  const int64_t fit = static_cast<int64_t>(arena_bytes / set_bytes);
  return std::max<int64_t>(1, std::min({static_cast<int64_t>(wanted), fit, kMaxRotationSets}));
}

int calls_per_sample(double call_s) {
  if (call_s >= kMinSampleS) return 1;
  const double calls = std::ceil(kMinSampleS / std::max(call_s, 1e-7));
  return static_cast<int>(std::min<double>(calls, kMaxCallsPerSample));
}

Timing GpuContext::time_calls(const std::function<void(int64_t call)>& enqueue) const {
  EventPair events;
  int64_t call = 0;
  auto timed = [&](int calls) {
    events.record_start(stream);
    for (int i = 0; i < calls; ++i) enqueue(call++);
    events.record_stop(stream);
    const double elapsed = events.wait_elapsed_s();
    check_cuda(cudaGetLastError(), "a timed kernel");
    return elapsed / calls;
  };
  timed(1);  // the first call may load modules or pick algorithms
  const int calls = calls_per_sample(timed(1));
  return sample_until_stable([&] { return timed(calls); }, sampler);
}

}  // namespace trainsim
