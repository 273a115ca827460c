// Memory-bound kernels (see cuda_memory_kernels.cuh). Each thread handles one 16-byte pack (8 bf16
// or 4 fp32); row kernels keep a whole row in registers across their block reductions, so each
// element is read once and written once. Simple rather than tuned: they stand for what a
// framework's own fused kernels reach, not for the best possible.
#include "calibrate/cuda_memory_kernels.cuh"

#include <cmath>

#include "calibrate/cuda_block_reduce.cuh"
#include "calibrate/cuda_context.cuh"
#include "common/errors.hpp"

namespace trainsim {

namespace {

constexpr int kThreads = 256;

struct alignas(16) Bf16x8 {
  __nv_bfloat16 h[8];
};

__device__ void unpack(const Bf16x8& pack, float* v) {
  for (int e = 0; e < 8; ++e) v[e] = __bfloat162float(pack.h[e]);
}

__device__ Bf16x8 pack_of(const float* v) {
  Bf16x8 pack;
  for (int e = 0; e < 8; ++e) pack.h[e] = __float2bfloat16(v[e]);
  return pack;
}

// blockDim.x = cols / 8: thread t owns columns 8t .. 8t+7 of row blockIdx.x.
__global__ void layernorm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                                 __nv_bfloat16* y, int64_t cols, float eps) {
  __shared__ float scratch[32];
  const int64_t offset = blockIdx.x * cols + threadIdx.x * 8;
  float v[8], g[8], b[8];
  unpack(*reinterpret_cast<const Bf16x8*>(x + offset), v);
  float sum = 0;
  for (int e = 0; e < 8; ++e) sum += v[e];
  const float mean = block_sum(sum, scratch) / static_cast<float>(cols);
  float sq = 0;
  for (int e = 0; e < 8; ++e) sq += (v[e] - mean) * (v[e] - mean);
  const float rstd = rsqrtf(block_sum(sq, scratch) / static_cast<float>(cols) + eps);
  unpack(*reinterpret_cast<const Bf16x8*>(gamma + threadIdx.x * 8), g);
  unpack(*reinterpret_cast<const Bf16x8*>(beta + threadIdx.x * 8), b);
  for (int e = 0; e < 8; ++e) v[e] = (v[e] - mean) * rstd * g[e] + b[e];
  *reinterpret_cast<Bf16x8*>(y + offset) = pack_of(v);
}

__global__ void softmax_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t cols, int64_t causal_period) {
  __shared__ float scratch[32];
  const int64_t offset = blockIdx.x * cols + threadIdx.x * 8;
  const int64_t last_col = causal_period > 0 ? static_cast<int64_t>(blockIdx.x) % causal_period : cols - 1;
  float v[8];
  unpack(*reinterpret_cast<const Bf16x8*>(x + offset), v);
  float local_max = -INFINITY;
  for (int e = 0; e < 8; ++e) {
    if (threadIdx.x * 8 + e > last_col) v[e] = -INFINITY;
    local_max = fmaxf(local_max, v[e]);
  }
  const float row_max = block_max(local_max, scratch);  // finite: column 0 is never masked
  float sum = 0;
  for (int e = 0; e < 8; ++e) {
    v[e] = __expf(v[e] - row_max);
    sum += v[e];
  }
  const float inverse = 1.0f / block_sum(sum, scratch);
  for (int e = 0; e < 8; ++e) v[e] *= inverse;
  *reinterpret_cast<Bf16x8*>(y + offset) = pack_of(v);
}

__device__ float gelu_tanh(float x) {
  const float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(kBeta * (x + 0.044715f * x * x * x)));
}

__global__ void gelu_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t packs) {
  const int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (p >= packs) return;
  float v[8];
  unpack(reinterpret_cast<const Bf16x8*>(x)[p], v);
  for (int e = 0; e < 8; ++e) v[e] = gelu_tanh(v[e]);
  reinterpret_cast<Bf16x8*>(y)[p] = pack_of(v);
}

__global__ void swiglu_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t width, int64_t packs) {
  const int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (p >= packs) return;
  const int64_t row = p * 8 / width, col = p * 8 % width;
  float gate[8], up[8];
  unpack(*reinterpret_cast<const Bf16x8*>(x + row * 2 * width + col), gate);
  unpack(*reinterpret_cast<const Bf16x8*>(x + row * 2 * width + width + col), up);
  for (int e = 0; e < 8; ++e) gate[e] = gate[e] / (1.0f + __expf(-gate[e])) * up[e];
  *reinterpret_cast<Bf16x8*>(y + p * 8) = pack_of(gate);
}

struct AdamScalars {
  float lr, beta1, beta2, eps, weight_decay, inv_correction1, inv_correction2;
};

__device__ void adam_one(float& p, float g, float& m, float& v, const AdamScalars& s) {
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  const float update = (m * s.inv_correction1) / (sqrtf(v * s.inv_correction2) + s.eps);
  p -= s.lr * (update + s.weight_decay * p);
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, int64_t packs, AdamScalars s) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  float4 pp = reinterpret_cast<float4*>(p)[i], mm = reinterpret_cast<float4*>(m)[i];
  float4 vv = reinterpret_cast<float4*>(v)[i];
  const float4 gg = reinterpret_cast<const float4*>(g)[i];
  adam_one(pp.x, gg.x, mm.x, vv.x, s);
  adam_one(pp.y, gg.y, mm.y, vv.y, s);
  adam_one(pp.z, gg.z, mm.z, vv.z, s);
  adam_one(pp.w, gg.w, mm.w, vv.w, s);
  reinterpret_cast<float4*>(p)[i] = pp;
  reinterpret_cast<float4*>(m)[i] = mm;
  reinterpret_cast<float4*>(v)[i] = vv;
}

unsigned blocks_for(int64_t packs) { return static_cast<unsigned>((packs + kThreads - 1) / kThreads); }

void check_row_width(int64_t cols) {
  TRAINSIM_ASSERT(cols % 256 == 0 && cols >= 256 && cols <= 8192, "row kernels take 256..8192 columns, by 256");
}

}  // namespace

void launch_layernorm(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                      __nv_bfloat16* y, int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  check_row_width(cols);
  layernorm_kernel<<<static_cast<unsigned>(rows), static_cast<unsigned>(cols / 8), 0, stream>>>(x, gamma, beta, y,
                                                                                                 cols, eps);
}

void launch_softmax(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t cols, int64_t causal_period,
                    cudaStream_t stream) {
  check_row_width(cols);
  softmax_kernel<<<static_cast<unsigned>(rows), static_cast<unsigned>(cols / 8), 0, stream>>>(x, y, cols,
                                                                                               causal_period);
}

void launch_gelu(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t count, cudaStream_t stream) {
  TRAINSIM_ASSERT(count % 8 == 0, "gelu takes a multiple of 8 values");
  gelu_kernel<<<blocks_for(count / 8), kThreads, 0, stream>>>(x, y, count / 8);
}

void launch_swiglu(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t width, cudaStream_t stream) {
  TRAINSIM_ASSERT(width % 8 == 0, "swiglu takes a width that is a multiple of 8");
  swiglu_kernel<<<blocks_for(rows * width / 8), kThreads, 0, stream>>>(x, y, width, rows * width / 8);
}

void launch_adam(float* p, const float* g, float* m, float* v, int64_t count, const AdamStep& step,
                 cudaStream_t stream) {
  TRAINSIM_ASSERT(count % 4 == 0, "adam takes a multiple of 4 values");
  const AdamScalars s{step.lr,
                      step.beta1,
                      step.beta2,
                      step.eps,
                      step.weight_decay,
                      static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(step.beta1), step.step))),
                      static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(step.beta2), step.step)))};
  adam_kernel<<<blocks_for(count / 4), kThreads, 0, stream>>>(p, g, m, v, count / 4, s);
}

}  // namespace trainsim
