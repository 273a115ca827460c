// The kernels of Megatron-LM's vocabulary-parallel token embedding and cross-entropy (tp > 1), the
// CUDA twins of runtime/cpu/cpu_model.cpp's embed / head_loss / embed_backward and of
// kernels/cpu/cpu_kernels.hpp's row_max, shard_softmax_stats and shard_cross_entropy_grad: each TP rank
// holds ids [first, first + count) of the token embedding and the LM head. The caller sums (or
// maxes) over the TP ranks between the steps (runtime/cuda/tp_collectives.hpp); with tp 1 the
// runtime keeps kernels.cuh's embedding_forward and cross_entropy. Launchers only: each enqueues on
// `stream` and throws DeviceError if the launch fails. Row-major bf16 rows with fp32 math, as kernels.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

// This TP rank's share of the vocabulary: ids [first, first + count) of `vocab`.
struct VocabShard {
  int64_t first = 0;  // tp_rank x vocab / tp
  int64_t count = 0;  // vocab / tp: the rows of wte and lm_head here, the columns of the logits
  int64_t vocab = 0;  // the whole vocabulary (a target outside [0, vocab) makes the loss NaN)
};

// ---- embedding ----
// out (rows, hidden) row r = wte[tokens[r] - first] for a token in the shard, zeros otherwise; wte
// holds the shard's count rows. Summed over the TP ranks, exactly one rank gives each row.
void embedding_shard_forward(const int32_t* tokens, const bf16* wte, const VocabShard& shard, bf16* out, int64_t rows, int64_t hidden,
                             cudaStream_t stream);
// x (rows, hidden) row i += wpe[positions[(first_row + i) % seq_rows]] (positions null: position
// (first_row + i) % seq_rows): the learned positions of the rows a rank holds after the TP sum (SP:
// rows [first_row, first_row + rows) of the micro-batch), added once as cpu_model.cpp adds them.
void add_position_embedding(bf16* x, const bf16* wpe, const int32_t* positions, int64_t rows, int64_t first_row, int64_t seq_rows,
                            int64_t hidden, cudaStream_t stream);
// Accumulates dwte (count, hidden) row tokens[r] - first += dout row r for the shard's tokens;
// other tokens are skipped (their rows live on another rank).
void embedding_shard_backward(const int32_t* tokens, const bf16* dout, float* dwte, const VocabShard& shard, int64_t rows,
                              int64_t hidden, cudaStream_t stream);

// ---- cross-entropy over logits (rows, count) of the shard's ids, in three steps ----
// 1. row_max (rows) fp32: the shard's largest logit per row       -> the caller takes the max over TP
void vocab_row_max(const bf16* logits, float* row_max, int64_t rows, int64_t cols, cudaStream_t stream);
// 2. stats (rows, 2) fp32: [sum of exp(logit - row_max), the target's logit or 0 where another rank
//    holds the target]                                             -> the caller sums over TP
void vocab_softmax_stats(const bf16* logits, const int32_t* targets, const float* row_max, float* stats, const VocabShard& shard,
                         int64_t rows, cudaStream_t stream);
// 3. adds the summed loss -(target logit - max - log(sum)) of the rows to *loss_sum (device; the same
//    on every TP rank) and writes dlogits = scale x (softmax - onehot(target)) on the shard's
//    columns. dlogits may alias logits.
void vocab_cross_entropy_grad(const bf16* logits, const int32_t* targets, const float* row_max, const float* stats, bf16* dlogits,
                              float* loss_sum, const VocabShard& shard, int64_t rows, float scale, cudaStream_t stream);

}  // namespace trainsim::cuda
