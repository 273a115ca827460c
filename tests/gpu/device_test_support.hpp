// What the GPU kernel tests share (tests/gpu/test_cuda_kernels.cpp, test_cuda_moe_kernels.cpp,
// test_ring_attention_kernels.cpp, test_vocab_parallel_kernels.cpp; the CUDA runtime's tests take
// the GPU check): device arrays, bf16-rounded random inputs, the relative error
// ||gpu - cpu||_2 / ||cpu||_2, and the skip without a GPU. Bounds, as test_cuda_kernels.cpp
// explains them: fp32 outputs from exact inputs 1e-4, bf16 outputs 1e-2, the attention backward
// 2e-2. Included by test files only, with CUDA.
#pragma once

#include <catch2/catch.hpp>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::gpu_test {

using cpu::Matrix;
using cuda::bf16;

constexpr double kFp32Tolerance = 1e-4;
constexpr double kBf16Tolerance = 1e-2;
constexpr double kAttentionBackwardTolerance = 2e-2;

inline bool gpu_visible() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" status
    return false;
  }
  return true;
}

#define SKIP_WITHOUT_GPU()                           \
  do {                                               \
    if (!::trainsim::gpu_test::gpu_visible()) {      \
      WARN("no GPU: skipped");                       \
      return;                                        \
    }                                                \
  } while (0)

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t count) : count_(count) {
    TRAINSIM_CUDA_CHECK(cudaMalloc(&ptr_, std::max<size_t>(count, 1) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    TRAINSIM_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  std::vector<T> download() const {  // kernels run on the legacy default stream: the copy waits for them
    std::vector<T> host(count_);
    TRAINSIM_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// A DeviceArray held by pointer, for vectors of them (a DeviceArray neither copies nor moves).
template <class T>
using Device = std::unique_ptr<DeviceArray<T>>;

inline float round_bf16(float v) { return __bfloat162float(__float2bfloat16(v)); }

// Uniform in [lo, hi), rounded to bf16 so that the CPU reference sees exactly the GPU's inputs.
inline std::vector<float> random_values(size_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = round_bf16(dist(rng));
  return v;
}

inline std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}

inline std::vector<float> to_float(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

inline std::vector<float> download_float(const DeviceArray<bf16>& d) { return to_float(d.download()); }

// ||got - want|| / ||want||. An infinite entry (a log-sum-exp of a row that has seen no key yet is
// -inf) must be the same infinity on both sides, else the error is infinite; it adds nothing to
// the norms. A NaN anywhere makes the error NaN, which no tolerance accepts.
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) || std::isinf(got[i])) {
      if (got[i] != want[i]) return std::numeric_limits<double>::infinity();
      continue;
    }
    diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// A matrix's values in its storage order (row-major), and back.
inline std::vector<float> flat(const Matrix& m) { return std::vector<float>(m.data(), m.data() + m.size()); }

inline Matrix to_matrix(const std::vector<float>& v, int64_t rows, int64_t cols) { return Eigen::Map<const Matrix>(v.data(), rows, cols); }

inline double relative_error(const std::vector<float>& got, const Matrix& want) { return relative_error(got, flat(want)); }

}  // namespace trainsim::gpu_test
