// The kernels context parallelism adds to kernels.cuh, the CUDA twins of kernels/cpu/attention_blocks.hpp
// and of the CPU model's true positions (runtime/cpu/cpu_model.cpp, runtime/cpu/ring_attention.hpp): with
// cp > 1 a rank holds two chunks of every sequence (chunks r and 2cp - 1 - r of 2cp), so its rows
// are not positions 0 .. seq - 1, and its attention is a ring of blocks (runtime/cuda/
// cuda_ring_attention.hpp) merged by log-sum-exp. Launchers only: each enqueues on `stream` and
// throws DeviceError if the launch fails. Row-major, the layouts of kernels.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

// ---- true positions: row r of a micro-batch is at positions[r % seq_rows] (positions: seq_rows
// int32 on the device, the rank's rows of one sequence in order; null: r % seq_rows, which is
// embedding_forward / embedding_backward / rotary_embedding themselves) ----
void embedding_forward_at(const int32_t* tokens, const bf16* wte, const bf16* wpe, const int32_t* positions, bf16* out, int64_t rows,
                          int64_t seq_rows, int64_t hidden, cudaStream_t stream);
// Accumulates dwte and dwpe (each skipped when null), dwpe at the rows' positions.
void embedding_backward_at(const int32_t* tokens, const bf16* dout, float* dwte, float* dwpe, const int32_t* positions, int64_t rows,
                           int64_t seq_rows, int64_t hidden, cudaStream_t stream);
void rotary_embedding_at(bf16* qkv, const int32_t* positions, int64_t rows, int64_t seq_rows, int64_t heads, int64_t kv_heads,
                         int64_t head_dim, double theta, bool inverse, cudaStream_t stream);

// ---- ring attention's blocks (kernels/cpu/attention_blocks.hpp on the GPU; flash kernels underneath) ----
// For each of `batch` sequences and each query head: the `rows` queries starting at row q_row of
// the sequence's seq_rows rows attend to the `rows` keys starting at row k_row, under the causal
// mask on true positions (query i, at q_position + i, sees key j, at k_position + j, iff
// k_position + j <= q_position + i). A block where the first query sees no key (k_position >
// q_position) is refused: the ring skips it. Ring attention's blocks are the diagonal one
// (q_position == k_position: causal) and earlier chunks (k_position + rows <= q_position: full).
struct AttentionBlock {
  int64_t batch = 1, heads = 1, kv_heads = 1, head_dim = 64;
  int64_t seq_rows = 1;                    // rows of each sequence in the buffers (a CP rank's seq_len / cp)
  int64_t rows = 1;                        // queries, and keys, of each sequence in the block (one chunk)
  int64_t q_row = 0, k_row = 0;            // the block's first query and key row among a sequence's rows
  int64_t q_position = 0, k_position = 0;  // their true positions in the sequence
};
// Buffers, T = batch * seq_rows rows: qkv (T, (heads + 2 kv_heads) d) as kernels.cuh (only Q is
// read); kv (T, 2 kv_heads d) = [K | V], the block passed round the ring; out, dq (T, heads d) fp32;
// dkv (T, 2 kv_heads d) = [dK | dV] fp32; lse, drow (batch * heads * seq_rows) fp32, entry
// bh * seq_rows + row.

// The block's partial result: its rows of `out` (softmax over the block's keys, times V) and of
// `lse` (natural log of sum exp(scale q.k) over those keys). Other rows are left alone.
void attention_block_forward(const bf16* qkv, const bf16* kv, float* out, float* lse, const AttentionBlock& block,
                             cudaStream_t stream);
// Folds a block's partial result (out_b, lse_b: its rows) into the running one (out, lse) over
// disjoint keys, as merge_attention_block: lse' = log(e^lse + e^lse_b), out' = e^(lse - lse') out +
// e^(lse_b - lse') out_b. A row with lse = -inf has seen no key yet (its out is replaced).
void attention_block_merge(float* out, float* lse, const float* out_b, const float* lse_b, const AttentionBlock& block,
                           cudaStream_t stream);
// D = rowsum(dO * O) of every (batch, head, row) of the merged output: dout, out (batch * seq rows,
// heads * head_dim) bf16, drow (batch * heads * seq) fp32 (`shape.seq` = seq_rows).
void attention_row_dot(const bf16* dout, const bf16* out, float* drow, const AttentionShape& shape, cudaStream_t stream);
// The block's backward given the merged lse and D (as attention_block_backward, FlashAttention-2's
// recomputation): ADDS the block's share into its rows of dq and dkv.
void attention_block_backward(const bf16* dout, const bf16* qkv, const bf16* kv, const float* lse, const float* drow, float* dq,
                              float* dkv, const AttentionBlock& block, cudaStream_t stream);

// dst[r * dst_stride + c] = bf16(src[r * cols + c]) for r < rows, c < cols: an fp32 matrix into a
// column block of a wider bf16 one (dst points at the block's first column).
void fp32_to_bf16_columns(const float* src, int64_t rows, int64_t cols, bf16* dst, int64_t dst_stride, cudaStream_t stream);

}  // namespace trainsim::cuda
