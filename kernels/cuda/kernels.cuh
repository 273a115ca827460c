// The CUDA backend's own kernels (everything but the GEMMs, which are in gemm.cuh): bf16
// activations and weights with fp32 math, fp32 gradients and optimizer state. Row-major
// (tokens x features) like the CPU backend (kernels/cpu/cpu_kernels.hpp), whose functions are the
// references every kernel is checked against (tests/gpu/test_cuda_kernels.cpp).
// Launchers only: each enqueues on `stream` and throws DeviceError (check_cuda) if the launch fails.
// "Accumulates" means += into what the buffer holds (gradients over micro-batches).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim::cuda {

using bf16 = __nv_bfloat16;

// ---- element-wise and conversions ----
void fp32_to_bf16(const float* x, bf16* y, int64_t count, cudaStream_t stream);
void bf16_to_fp32(const bf16* x, float* y, int64_t count, cudaStream_t stream);
void add(const bf16* a, const bf16* b, bf16* out, int64_t count, cudaStream_t stream);  // out may alias a or b
void scale_fp32(float* x, float factor, int64_t count, cudaStream_t stream);
void fill_fp32(float* x, float value, int64_t count, cudaStream_t stream);
void accumulate_fp32(float* y, const float* x, int64_t count, cudaStream_t stream);  // y += x

// ---- embedding: out[r] = wte[tokens[r]] + wpe[r % seq] (wpe null: no position table, RoPE models) ----
void embedding_forward(const int32_t* tokens, const bf16* wte, const bf16* wpe, bf16* out, int64_t rows, int64_t seq,
                       int64_t hidden, cudaStream_t stream);
// Accumulates dwte (vocab, hidden) and dwpe (seq, hidden; skipped when null).
void embedding_backward(const int32_t* tokens, const bf16* dout, float* dwte, float* dwpe, int64_t rows, int64_t seq,
                        int64_t hidden, cudaStream_t stream);

// ---- bias ----
void add_bias(bf16* y, const bf16* bias, int64_t rows, int64_t cols, cudaStream_t stream);  // y[r] += bias
void bias_grad(const bf16* dy, float* dbias, int64_t rows, int64_t cols, cudaStream_t stream);  // accumulates column sums

// ---- layer norm (eps 1e-5 as the CPU backend), fp32 statistics kept for the backward ----
void layer_norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, float* mean, float* rstd, int64_t rows,
                        int64_t cols, cudaStream_t stream);
// Writes dx; accumulates dgamma, dbeta.
void layer_norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* mean, const float* rstd, bf16* dx,
                         float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream);

// ---- RMSNorm (Llama; eps 1e-5 as the CPU backend): y = x * rstd * gamma, rstd kept ----
void rms_norm_forward(const bf16* x, const bf16* gamma, bf16* y, float* rstd, int64_t rows, int64_t cols, cudaStream_t stream);
// Writes dx; accumulates dgamma.
void rms_norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* rstd, bf16* dx, float* dgamma, int64_t rows,
                       int64_t cols, cudaStream_t stream);

// ---- rotary position embedding, in place on the Q and K blocks of qkv (layout of the attention
// below; V untouched), as kernels/cpu/cpu_kernels.hpp rotary_embedding: row r is position r % seq, and
// each head's dimension i < d/2 pairs with i + d/2, turning by position x theta^(-2i/d). `inverse`
// turns back (the backward). Angles in double, as the CPU backend. ----
void rotary_embedding(bf16* qkv, int64_t rows, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim, double theta,
                      bool inverse, cudaStream_t stream);

// ---- activations ----
void gelu_forward(const bf16* x, bf16* y, int64_t count, cudaStream_t stream);  // tanh form, as GPT-2
void gelu_backward(const bf16* dy, const bf16* x, bf16* dx, int64_t count, cudaStream_t stream);
// x: (rows, 2 * width) = [gate | up] per row; y: (rows, width) = silu(gate) * up.
void swiglu_forward(const bf16* x, bf16* y, int64_t rows, int64_t width, cudaStream_t stream);
void swiglu_backward(const bf16* dy, const bf16* x, bf16* dx, int64_t rows, int64_t width, cudaStream_t stream);

// ---- causal self-attention ----
// qkv: (batch * seq, (heads + 2 * kv_heads) * head_dim), per token [Q (heads*d) | K (kv*d) | V (kv*d)]
// (the CPU backend's layout; kv_heads == heads is MHA, fewer is GQA: query head h reads kv head
// h / (heads / kv_heads)). out: (batch * seq, heads * head_dim). Softmax scale 1/sqrt(head_dim).
struct AttentionShape {
  int64_t batch = 1, seq = 1, heads = 1, kv_heads = 1, head_dim = 64;
};
// Fused (FlashAttention-style: online softmax, no s x s matrix in memory). Saves the row
// log-sum-exp, lse: (batch * heads * seq) fp32, for the backward.
void flash_attention_forward(const bf16* qkv, bf16* out, float* lse, const AttentionShape& shape, cudaStream_t stream);
size_t flash_attention_backward_scratch_bytes(const AttentionShape& shape);
// Writes dqkv (same layout as qkv). `scratch` holds flash_attention_backward_scratch_bytes bytes.
void flash_attention_backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, bf16* dqkv,
                              void* scratch, const AttentionShape& shape, cudaStream_t stream);
// Unfused reference path (Q K^T GEMM, masked softmax, P V GEMM with cuBLAS; the s x s
// probabilities are kept: probs holds batch * heads * seq * seq bf16). `blas` is a cublasHandle_t.
size_t unfused_attention_scratch_bytes(const AttentionShape& shape);
void unfused_attention_forward(void* blas, const bf16* qkv, bf16* out, bf16* probs, void* scratch,
                               const AttentionShape& shape, cudaStream_t stream);
void unfused_attention_backward(void* blas, const bf16* dout, const bf16* qkv, const bf16* probs, bf16* dqkv, void* scratch,
                                const AttentionShape& shape, cudaStream_t stream);
// The unfused forward's causal softmax on its own (the GPU calibrator times it): in place on
// `rows` rows of `seq` bf16 scores, row r being query r % seq (keys after it become 0).
void causal_softmax(bf16* scores, int64_t rows, int64_t seq, cudaStream_t stream);

// ---- loss ----
// Softmax cross-entropy over `vocab` logits per row: accumulates the SUM of -log p(target) into
// *loss_sum (device, fp32) and writes dlogits = scale * (softmax - onehot(target)).
void cross_entropy(const bf16* logits, const int32_t* targets, bf16* dlogits, float* loss_sum, int64_t rows, int64_t vocab,
                   float scale, cudaStream_t stream);

// ---- optimizer ----
// Accumulates sum(mask[i] * g[i]^2) into *out (device, double); mask may be null (all ones).
void sum_of_squares(const float* g, const float* mask, int64_t count, double* out, cudaStream_t stream);
struct AdamW {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
  int64_t step = 1;        // for the bias corrections 1 - beta^step
};
// g' = g * grad_scale (global-norm clipping); m, v, master updated in place (fp32, as the CPU
// backend: p -= lr * (m / c1) / (sqrt(v / c2) + eps), plus decoupled weight decay); the bf16
// working copy `weight` (may be null) is written from the new master.
void adamw(float* master, const float* g, float* m, float* v, bf16* weight, int64_t count, const AdamW& settings,
           float grad_scale, cudaStream_t stream);

}  // namespace trainsim::cuda
