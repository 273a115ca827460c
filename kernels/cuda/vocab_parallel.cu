// Vocabulary-parallel embedding and cross-entropy of vocab_parallel.cuh. The embedding kernels are
// grid-stride loops over (row, group of 8 or 1 columns), as embedding.cu's; the cross-entropy runs
// one block per row over the shard's columns, as loss.cu, in three launches between which the
// caller reduces over TP. CPU references: kernels/cpu/cpu_kernels.cpp row_max, shard_softmax_stats,
// shard_cross_entropy_grad (tests/gpu/test_vocab_parallel_kernels.cpp).
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/vocab_parallel.cuh"

namespace trainsim::cuda {

namespace {

constexpr int kRowThreads = 256;

template <int kVec>
__global__ void embedding_shard_forward_kernel(const int32_t* tokens, const bf16* wte, int64_t first, int64_t count, bf16* out,
                                               int64_t rows, int64_t hidden) {
  const int64_t groups = hidden / kVec, total = rows * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / groups, c = (i % groups) * kVec;
    const int64_t local = static_cast<int64_t>(tokens[r]) - first;
    float v[kVec];
    if (local >= 0 && local < count) {
      load_bf16<kVec>(wte + local * hidden + c, v);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = 0.0f;
    }
    store_bf16<kVec>(out + r * hidden + c, v);
  }
}

// The sum rounds once to bf16, as embedding.cu's token + position sum: on the rows the TP sum gave
// (one rank's token row plus zeros) it is that kernel's result bit for bit.
template <int kVec>
__global__ void add_position_kernel(bf16* x, const bf16* wpe, const int32_t* positions, int64_t rows, int64_t first_row,
                                    int64_t seq_rows, int64_t hidden) {
  const int64_t groups = hidden / kVec, total = rows * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / groups, c = (i % groups) * kVec;
    const int64_t k = (first_row + r) % seq_rows;
    const int64_t position = positions == nullptr ? k : positions[k];
    float a[kVec], b[kVec];
    load_bf16<kVec>(x + r * hidden + c, a);
    load_bf16<kVec>(wpe + position * hidden + c, b);
#pragma unroll
    for (int j = 0; j < kVec; ++j) a[j] += b[j];
    store_bf16<kVec>(x + r * hidden + c, a);
  }
}

__global__ void embedding_shard_grad_kernel(const int32_t* tokens, const bf16* dout, float* dwte, int64_t first, int64_t count,
                                            int64_t rows, int64_t hidden) {
  for (int64_t i = global_thread(); i < rows * hidden; i += grid_threads()) {
    const int64_t r = i / hidden, c = i % hidden;
    const int64_t local = static_cast<int64_t>(tokens[r]) - first;
    if (local >= 0 && local < count) atomicAdd(dwte + local * hidden + c, __bfloat162float(dout[i]));
  }
}

template <int kVec>
__global__ void __launch_bounds__(kRowThreads) row_max_kernel(const bf16* logits, float* row_max, int64_t cols) {
  __shared__ float scratch[32];
  const bf16* x = logits + static_cast<int64_t>(blockIdx.x) * cols;
  float m = -INFINITY, v[kVec];
  for (int64_t c = threadIdx.x * kVec; c < cols; c += kRowThreads * kVec) {
    load_bf16<kVec>(x + c, v);
#pragma unroll
    for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[j]);
  }
  m = block_max(m, scratch);
  if (threadIdx.x == 0) row_max[blockIdx.x] = m;
}

template <int kVec>
__global__ void __launch_bounds__(kRowThreads)
    softmax_stats_kernel(const bf16* logits, const int32_t* targets, const float* row_max, float* stats, int64_t first, int64_t cols) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const bf16* x = logits + row * cols;
  const float m = row_max[row];
  float s = 0.0f, v[kVec];
  for (int64_t c = threadIdx.x * kVec; c < cols; c += kRowThreads * kVec) {
    load_bf16<kVec>(x + c, v);
#pragma unroll
    for (int j = 0; j < kVec; ++j) s += expf(v[j] - m);
  }
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) {
    const int64_t local = static_cast<int64_t>(targets[row]) - first;
    stats[2 * row] = s;
    stats[2 * row + 1] = local >= 0 && local < cols ? __bfloat162float(x[local]) : 0.0f;
  }
}

// Each thread reads its columns before it writes them, so dlogits may alias logits.
template <int kVec>
__global__ void __launch_bounds__(kRowThreads)
    cross_entropy_grad_kernel(const bf16* logits, const int32_t* targets, const float* row_max, const float* stats, bf16* dlogits,
                              float* loss_sum, int64_t first, int64_t cols, int64_t vocab, float scale) {
  const int64_t row = blockIdx.x;
  const float m = row_max[row], sum = stats[2 * row], target_logit = stats[2 * row + 1];
  const int64_t target = targets[row], local = target - first;
  if (threadIdx.x == 0) atomicAdd(loss_sum, target >= 0 && target < vocab ? -(target_logit - m - logf(sum)) : NAN);
  const float factor = scale / sum;
  const bf16* x = logits + row * cols;
  bf16* dx = dlogits + row * cols;
  float v[kVec];
  for (int64_t c = threadIdx.x * kVec; c < cols; c += kRowThreads * kVec) {
    load_bf16<kVec>(x + c, v);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = expf(v[j] - m) * factor - (c + j == local ? scale : 0.0f);
    store_bf16<kVec>(dx + c, v);
  }
}

}  // namespace

void embedding_shard_forward(const int32_t* tokens, const bf16* wte, const VocabShard& shard, bf16* out, int64_t rows, int64_t hidden,
                             cudaStream_t stream) {
  if (rows <= 0 || hidden <= 0) return;
  if (hidden % 8 == 0 && aligned16(wte) && aligned16(out)) {
    embedding_shard_forward_kernel<8><<<grid_for(rows * hidden / 8), kThreads, 0, stream>>>(tokens, wte, shard.first, shard.count, out,
                                                                                           rows, hidden);
  } else {
    embedding_shard_forward_kernel<1><<<grid_for(rows * hidden), kThreads, 0, stream>>>(tokens, wte, shard.first, shard.count, out,
                                                                                       rows, hidden);
  }
  check_launch("embedding_shard_forward");
}

void add_position_embedding(bf16* x, const bf16* wpe, const int32_t* positions, int64_t rows, int64_t first_row, int64_t seq_rows,
                            int64_t hidden, cudaStream_t stream) {
  if (rows <= 0 || hidden <= 0) return;
  if (hidden % 8 == 0 && aligned16(x) && aligned16(wpe)) {
    add_position_kernel<8><<<grid_for(rows * hidden / 8), kThreads, 0, stream>>>(x, wpe, positions, rows, first_row, seq_rows, hidden);
  } else {
    add_position_kernel<1><<<grid_for(rows * hidden), kThreads, 0, stream>>>(x, wpe, positions, rows, first_row, seq_rows, hidden);
  }
  check_launch("add_position_embedding");
}

void embedding_shard_backward(const int32_t* tokens, const bf16* dout, float* dwte, const VocabShard& shard, int64_t rows,
                              int64_t hidden, cudaStream_t stream) {
  if (rows <= 0 || hidden <= 0) return;
  embedding_shard_grad_kernel<<<grid_for(rows * hidden), kThreads, 0, stream>>>(tokens, dout, dwte, shard.first, shard.count, rows,
                                                                                hidden);
  check_launch("embedding_shard_backward");
}

void vocab_row_max(const bf16* logits, float* row_max, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (cols % 8 == 0 && aligned16(logits)) {
    row_max_kernel<8><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(logits, row_max, cols);
  } else {
    row_max_kernel<1><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(logits, row_max, cols);
  }
  check_launch("vocab_row_max");
}

void vocab_softmax_stats(const bf16* logits, const int32_t* targets, const float* row_max, float* stats, const VocabShard& shard,
                         int64_t rows, cudaStream_t stream) {
  if (rows <= 0 || shard.count <= 0) return;
  if (shard.count % 8 == 0 && aligned16(logits)) {
    softmax_stats_kernel<8><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(logits, targets, row_max, stats, shard.first,
                                                                                    shard.count);
  } else {
    softmax_stats_kernel<1><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(logits, targets, row_max, stats, shard.first,
                                                                                    shard.count);
  }
  check_launch("vocab_softmax_stats");
}

void vocab_cross_entropy_grad(const bf16* logits, const int32_t* targets, const float* row_max, const float* stats, bf16* dlogits,
                              float* loss_sum, const VocabShard& shard, int64_t rows, float scale, cudaStream_t stream) {
  if (rows <= 0 || shard.count <= 0) return;
  if (shard.count % 8 == 0 && aligned16(logits) && aligned16(dlogits)) {
    cross_entropy_grad_kernel<8><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
        logits, targets, row_max, stats, dlogits, loss_sum, shard.first, shard.count, shard.vocab, scale);
  } else {
    cross_entropy_grad_kernel<1><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
        logits, targets, row_max, stats, dlogits, loss_sum, shard.first, shard.count, shard.vocab, scale);
  }
  check_launch("vocab_cross_entropy_grad");
}

}  // namespace trainsim::cuda
