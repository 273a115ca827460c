// The MoE layer's own kernels (runtime/cuda/cuda_moe.hpp runs them): moving token rows between the
// orders the layer needs (tokens, copies grouped by expert, rows received per source rank), the
// weighted sum of each token's copies, the router weights' gradient and the backward of the softmax
// over the chosen logits. Row-major bf16 rows with fp32 math, as kernels.cuh; the index maps come
// from the host (runtime/cuda/moe_dispatch.hpp), which routes. CPU references:
// runtime/cpu/moe_layer.cpp and runtime/moe_routing.cpp (tests/gpu/test_cuda_moe.cpp).
// Launchers only: each enqueues on `stream` and throws DeviceError (check_launch) if the launch fails.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace trainsim::cuda {

// dst (rows, cols) row i = scale[i] x src row index[i] (scale null: 1). Gathers token copies into
// expert order, received rows into expert-major order and back (index a permutation), and with
// `scale` the routed gradient w x dy of each copy. dst must not alias src.
void moe_gather_rows(const __nv_bfloat16* src, const int32_t* index, const float* scale, __nv_bfloat16* dst, int64_t rows,
                     int64_t cols, cudaStream_t stream);

// dst (tokens, cols) row t = sum over j < k of weight[t*k + j] x src row index[t*k + j] (weight null:
// 1), summed in fp32 in j order: the un-permute of the experts' outputs with the router weights
// (forward), or of the copies' input gradients (backward). No atomics: one token per thread group.
void moe_combine_rows(const __nv_bfloat16* src, const int32_t* index, const float* weight, __nv_bfloat16* dst, int64_t tokens,
                      int64_t k, int64_t cols, cudaStream_t stream);

// dweight[t*k + j] = dy row t . src row index[t*k + j] (fp32): the gradient of each copy's router
// weight, y_t = sum_j w_tj out_tj giving d w_tj = dy_t . out_tj.
void moe_weight_grads(const __nv_bfloat16* dy, const __nv_bfloat16* src, const int32_t* index, float* dweight, int64_t tokens,
                      int64_t k, int64_t cols, cudaStream_t stream);

// The softmax over the chosen logits, backward: dlogits (tokens, experts) = 0 except, for each
// chosen expert e = expert[t*k + j], w_j (dw_j - sum_i w_i dw_i) (runtime/moe_routing.cpp
// route_top_k_backward). weight, expert, dweight: (tokens x k), slot order.
void moe_router_backward(const float* weight, const int32_t* expert, const float* dweight, __nv_bfloat16* dlogits,
                         int64_t tokens, int64_t k, int64_t experts, cudaStream_t stream);

}  // namespace trainsim::cuda
