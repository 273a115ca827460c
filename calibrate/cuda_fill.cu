// Device-side fills for test data (see cuda_fill.cuh): one grid-stride kernel per pattern, typed
// by the element type the measurement uses. Values depend only on (index, seed), so a host
// reference can read back any slice and recompute nothing.
#include "calibrate/cuda_fill.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "calibrate/cuda_context.cuh"
#include "common/errors.hpp"

namespace trainsim {

namespace {

constexpr int kFillThreads = 256;
constexpr int64_t kFillMaxBlocks = 65536;

__device__ uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void fill_uniform_kernel(T* data, size_t count, uint64_t seed, float lo, float span) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    const float u = static_cast<float>(mix(i ^ (seed << 40)) >> 40) * (1.0f / 16777216.0f);
    data[i] = static_cast<T>(lo + span * u);
  }
}

__global__ void fill_modular_kernel(float* data, size_t count, float base, int64_t modulus) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    data[i] = base + static_cast<float>(static_cast<int64_t>(i % static_cast<size_t>(modulus)));
  }
}

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kFillThreads - 1) / kFillThreads;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(blocks, kFillMaxBlocks)));
}

}  // namespace

size_t element_bytes(ElementType type) {
  switch (type) {
    case ElementType::bf16: return 2;
    case ElementType::fp16: return 2;
    case ElementType::fp32: return 4;
    case ElementType::fp8_e4m3: return 1;
  }
  return 0;
}

void fill_uniform(ElementType type, void* data, size_t count, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  const unsigned blocks = blocks_for(count);
  switch (type) {
    case ElementType::bf16:
      fill_uniform_kernel<<<blocks, kFillThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed, lo, hi - lo);
      break;
    case ElementType::fp16:
      fill_uniform_kernel<<<blocks, kFillThreads, 0, stream>>>(static_cast<__half*>(data), count, seed, lo, hi - lo);
      break;
    case ElementType::fp32:
      fill_uniform_kernel<<<blocks, kFillThreads, 0, stream>>>(static_cast<float*>(data), count, seed, lo, hi - lo);
      break;
    case ElementType::fp8_e4m3:
      fill_uniform_kernel<<<blocks, kFillThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed, lo, hi - lo);
      break;
  }
  check_cuda(cudaGetLastError(), "launching a fill kernel");
}

void fill_modular(float* data, size_t count, float base, int64_t modulus, cudaStream_t stream) {
  fill_modular_kernel<<<blocks_for(count), kFillThreads, 0, stream>>>(data, count, base, modulus);
  check_cuda(cudaGetLastError(), "launching a fill kernel");
}

}  // namespace trainsim
