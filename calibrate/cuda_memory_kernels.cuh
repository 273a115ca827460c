// Our own memory-bound kernels, written the plain way a training framework would: layernorm,
// row-wise softmax (optionally causal, also used by unfused attention), GELU (tanh form), SwiGLU
// and an AdamW step. bf16 activations with fp32 math, fp32 optimizer state; 16-byte accesses.
// Launchers only; timing and checks live in cuda_memory_sweep.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace trainsim {

// Rows of `cols` values, one block per row: cols must be a multiple of 256 and at most 8192.
void launch_layernorm(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                      __nv_bfloat16* y, int64_t rows, int64_t cols, float eps, cudaStream_t stream);
// y may equal x. causal_period > 0: row r is query r mod causal_period of a (period x cols) score
// matrix, and columns after it are masked (probability 0).
void launch_softmax(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t cols, int64_t causal_period,
                    cudaStream_t stream);
// count a multiple of 8.
void launch_gelu(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t count, cudaStream_t stream);
// x: (rows, 2 * width) = [gate | up] per row; y: (rows, width) = silu(gate) * up. width a multiple of 8.
void launch_swiglu(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t width, cudaStream_t stream);

struct AdamStep {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  int step = 10;  // for the bias corrections 1 - beta^step
};
// In place on p, m, v (fp32); g read. count a multiple of 4.
void launch_adam(float* p, const float* g, float* m, float* v, int64_t count, const AdamStep& step,
                 cudaStream_t stream);

}  // namespace trainsim
