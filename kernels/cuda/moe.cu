// The MoE kernels of moe.cuh. Row moves and the weighted combine take 8 columns per 16-byte access
// when the row width and pointers allow it; the router weights' gradient is one warp per copy (a
// dot product over the hidden width), the softmax backward one thread per token (k and the
// experts are small). Deterministic: no atomics, every output element written by one thread.
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/moe.cuh"

namespace trainsim::cuda {

namespace {

using bf16 = __nv_bfloat16;

template <int kVec>
__global__ void gather_rows_kernel(const bf16* src, const int32_t* index, const float* scale, bf16* dst, int64_t rows,
                                   int64_t cols) {
  const int64_t groups = cols / kVec, total = rows * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / groups, c = (i % groups) * kVec;
    const float s = scale == nullptr ? 1.0f : scale[r];
    float v[kVec];
    load_bf16<kVec>(src + static_cast<int64_t>(index[r]) * cols + c, v);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] *= s;
    store_bf16<kVec>(dst + r * cols + c, v);
  }
}

template <int kVec>
__global__ void combine_rows_kernel(const bf16* src, const int32_t* index, const float* weight, bf16* dst, int64_t tokens,
                                    int64_t k, int64_t cols) {
  const int64_t groups = cols / kVec, total = tokens * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t t = i / groups, c = (i % groups) * kVec;
    float sum[kVec] = {}, v[kVec];
    for (int64_t j = 0; j < k; ++j) {
      const int64_t slot = t * k + j;
      const float w = weight == nullptr ? 1.0f : weight[slot];
      load_bf16<kVec>(src + static_cast<int64_t>(index[slot]) * cols + c, v);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum[e] += w * v[e];
    }
    store_bf16<kVec>(dst + t * cols + c, sum);
  }
}

// One warp per copy; the loop bound is the same for the warp's lanes (warp_sum needs all 32).
__global__ void weight_grads_kernel(const bf16* dy, const bf16* src, const int32_t* index, float* dweight, int64_t copies,
                                    int64_t k, int64_t cols) {
  const int64_t first = global_thread() / 32, step = grid_threads() / 32;
  const int lane = threadIdx.x & 31;
  for (int64_t slot = first; slot < copies; slot += step) {
    const bf16* a = dy + (slot / k) * cols;
    const bf16* b = src + static_cast<int64_t>(index[slot]) * cols;
    float sum = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) sum += __bfloat162float(a[c]) * __bfloat162float(b[c]);
    sum = warp_sum(sum);
    if (lane == 0) dweight[slot] = sum;
  }
}

__global__ void router_backward_kernel(const float* weight, const int32_t* expert, const float* dweight, bf16* dlogits,
                                       int64_t tokens, int64_t k, int64_t experts) {
  for (int64_t t = global_thread(); t < tokens; t += grid_threads()) {
    bf16* row = dlogits + t * experts;
    for (int64_t e = 0; e < experts; ++e) row[e] = __float2bfloat16(0.0f);
    float dot = 0.0f;
    for (int64_t j = 0; j < k; ++j) dot += weight[t * k + j] * dweight[t * k + j];
    for (int64_t j = 0; j < k; ++j) {
      const int64_t slot = t * k + j;
      row[expert[slot]] = __float2bfloat16(weight[slot] * (dweight[slot] - dot));
    }
  }
}

// 8 columns per access when every row starts 16-byte aligned.
bool rows_vectorizable(const void* a, const void* b, int64_t cols) { return cols % 8 == 0 && aligned16(a) && aligned16(b); }

}  // namespace

void moe_gather_rows(const bf16* src, const int32_t* index, const float* scale, bf16* dst, int64_t rows, int64_t cols,
                     cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (rows_vectorizable(src, dst, cols)) {
    gather_rows_kernel<8><<<grid_for(rows * cols / 8), kThreads, 0, stream>>>(src, index, scale, dst, rows, cols);
  } else {
    gather_rows_kernel<1><<<grid_for(rows * cols), kThreads, 0, stream>>>(src, index, scale, dst, rows, cols);
  }
  check_launch("moe_gather_rows");
}

void moe_combine_rows(const bf16* src, const int32_t* index, const float* weight, bf16* dst, int64_t tokens, int64_t k,
                      int64_t cols, cudaStream_t stream) {
  if (tokens <= 0 || cols <= 0) return;
  if (rows_vectorizable(src, dst, cols)) {
    combine_rows_kernel<8><<<grid_for(tokens * cols / 8), kThreads, 0, stream>>>(src, index, weight, dst, tokens, k, cols);
  } else {
    combine_rows_kernel<1><<<grid_for(tokens * cols), kThreads, 0, stream>>>(src, index, weight, dst, tokens, k, cols);
  }
  check_launch("moe_combine_rows");
}

void moe_weight_grads(const bf16* dy, const bf16* src, const int32_t* index, float* dweight, int64_t tokens, int64_t k,
                      int64_t cols, cudaStream_t stream) {
  if (tokens <= 0 || k <= 0) return;
  weight_grads_kernel<<<grid_for(tokens * k * 32), kThreads, 0, stream>>>(dy, src, index, dweight, tokens * k, k, cols);
  check_launch("moe_weight_grads");
}

void moe_router_backward(const float* weight, const int32_t* expert, const float* dweight, bf16* dlogits, int64_t tokens,
                         int64_t k, int64_t experts, cudaStream_t stream) {
  if (tokens <= 0) return;
  router_backward_kernel<<<grid_for(tokens), kThreads, 0, stream>>>(weight, expert, dweight, dlogits, tokens, k, experts);
  check_launch("moe_router_backward");
}

}  // namespace trainsim::cuda
