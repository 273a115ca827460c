// Attention forward kernels of our own: "trainsim-flash-v1", a fused FlashAttention-style kernel
// (online softmax, tensor cores via WMMA, no backward), and a naive one-block-per-query-row
// reference in fp32 that the checks compare against. Q, K, V and O are (batch_heads, seq,
// head_dim) bf16, row-major; the softmax scale is 1/sqrt(head_dim).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace trainsim {

// head_dim 64 or 128; seq a multiple of 64.
void launch_flash_attention(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                            int64_t batch_heads, int64_t seq, int64_t head_dim, bool causal, cudaStream_t stream);

// out[r][c] (fp32, row_count x head_dim) is the attention output of query row rows[r], a flat
// index batch_head * seq + query (rows is a device array). seq at most 8192.
void launch_attention_reference(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                const int64_t* rows, int64_t row_count, float* out, int64_t seq, int64_t head_dim,
                                bool causal, cudaStream_t stream);

}  // namespace trainsim
