// Device-side pieces shared by the kernel files (internal to kernels/cuda/): warp and
// block reductions, 16-byte packs of 8 bf16, alignment tests and grid sizing for grid-stride
// loops. Included by .cu files only; no kernels here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace trainsim::cuda {

constexpr int kThreads = 256;  // threads per block of the element-wise kernels

// Blocks for a grid-stride loop over `work` items (at least 1, at most 2^20: enough to fill any GPU).
inline unsigned grid_for(int64_t work, int threads = kThreads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (int64_t{1} << 20) ? (int64_t{1} << 20) : blocks));
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

__device__ inline int64_t global_thread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Eight bf16 in one 16-byte load or store.
struct alignas(16) Bf16x8 {
  __nv_bfloat16 v[8];
};

// kVec (1 or 8) consecutive bf16 to or from fp32; kVec 8 needs 16-byte aligned addresses.
template <int kVec>
__device__ inline void load_bf16(const __nv_bfloat16* p, float* v) {
  if constexpr (kVec == 8) {
    const Bf16x8 b = *reinterpret_cast<const Bf16x8*>(p);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = __bfloat162float(b.v[j]);
  } else {
    v[0] = __bfloat162float(*p);
  }
}

template <int kVec>
__device__ inline void store_bf16(__nv_bfloat16* p, const float* v) {
  if constexpr (kVec == 8) {
    Bf16x8 b;
#pragma unroll
    for (int j = 0; j < 8; ++j) b.v[j] = __float2bfloat16(v[j]);
    *reinterpret_cast<Bf16x8*>(p) = b;
  } else {
    *p = __float2bfloat16(v[0]);
  }
}

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Every thread of the block gets the result; blockDim.x a multiple of 32; `scratch` holds 32
// values and may be reused right away by the next reduction (it synchronises before writing).
template <class T>
__device__ inline T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_sum(lane < warps ? scratch[lane] : T(0));
}

// Block-wide max, as block_sum (every thread gets it; `scratch` 32 values, reusable right away).
__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_max(lane < warps ? scratch[lane] : -INFINITY);
}

// Merges two partial softmax normalisers (max m, sum of exp(x - m)) into one.
__device__ inline void merge_softmax(float& m, float& s, float other_m, float other_s) {
  const float merged = fmaxf(m, other_m);
  if (merged == -INFINITY) return;  // both empty
  s = s * expf(m - merged) + other_s * expf(other_m - merged);
  m = merged;
}

__device__ inline void warp_merge_softmax(float& m, float& s) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_m = __shfl_xor_sync(0xffffffffu, m, offset);
    const float other_s = __shfl_xor_sync(0xffffffffu, s, offset);
    merge_softmax(m, s, other_m, other_s);
  }
}

// Block-wide (max, sum) of a softmax row; every thread gets both. Scratch: 64 floats.
__device__ inline void block_merge_softmax(float& m, float& s, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  warp_merge_softmax(m, s);
  __syncthreads();
  if (lane == 0) scratch[warp] = m, scratch[32 + warp] = s;
  __syncthreads();
  m = lane < warps ? scratch[lane] : -INFINITY;
  s = lane < warps ? scratch[32 + lane] : 0.0f;
  warp_merge_softmax(m, s);
}

// out[i] = op(a[i]) or op(a[i], b[i]) (Op::kInputs 1 or 2), fp32 math, 8 elements per 16-byte
// access when `vec` (all pointers 16-byte aligned), then a scalar tail. out may alias a or b.
template <class Op>
__global__ void map_bf16_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int64_t count,
                                bool vec, Op op) {
  const int64_t vecs = vec ? count / 8 : 0;
  for (int64_t i = global_thread(); i < vecs; i += grid_threads()) {
    const Bf16x8 x = reinterpret_cast<const Bf16x8*>(a)[i];
    Bf16x8 y{};
    if constexpr (Op::kInputs == 2) y = reinterpret_cast<const Bf16x8*>(b)[i];
    Bf16x8 r;
#pragma unroll
    for (int j = 0; j < 8; ++j) r.v[j] = __float2bfloat16(op(__bfloat162float(x.v[j]), __bfloat162float(y.v[j])));
    reinterpret_cast<Bf16x8*>(out)[i] = r;
  }
  for (int64_t i = vecs * 8 + global_thread(); i < count; i += grid_threads()) {
    float y = 0.0f;
    if constexpr (Op::kInputs == 2) y = __bfloat162float(b[i]);
    out[i] = __float2bfloat16(op(__bfloat162float(a[i]), y));
  }
}

template <class Op>
void launch_map_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int64_t count, Op op,
                     cudaStream_t stream) {
  if (count <= 0) return;
  const bool vec = aligned16(a) && aligned16(out) && (Op::kInputs == 1 || aligned16(b));
  map_bf16_kernel<<<grid_for(vec ? (count + 7) / 8 : count), kThreads, 0, stream>>>(a, b, out, count, vec, op);
}

}  // namespace trainsim::cuda
