// Ring attention's blocks of context_parallel.cuh: each block runs the flash kernels
// (attention_flash_forward.cu, attention_flash_backward.cu) on a Geometry whose queries are a chunk
// of qkv's rows and whose keys a chunk of the travelling [K | V] block, with the diagonal offset of
// their true positions; outputs are fp32 (the forward's partial result, the backward's dQ, dK, dV
// accumulated over blocks). The log-sum-exp merge is its own kernel: one warp per query row and head.
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "kernels/cuda/attention_flash_tiles.cuh"
#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/device_math.cuh"

namespace trainsim::cuda {

namespace {

using flash::Geometry;

// Checks the block (DeviceError naming it) and derives its Geometry; q, kv, dout point at the
// block's first query, key and dO row of sequence 0 (dout may be null).
Geometry block_geometry(const AttentionBlock& b, const bf16* q, const bf16* kv, const bf16* dout) {
  const int64_t diagonal = b.q_position - b.k_position;
  if (b.rows <= 0 || b.q_row < 0 || b.k_row < 0 || b.q_row + b.rows > b.seq_rows || b.k_row + b.rows > b.seq_rows || diagonal < 0 ||
      b.k_position < 0) {
    throw DeviceError("ring attention block: bad block (rows " + std::to_string(b.rows) + " from query row " + std::to_string(b.q_row) +
                      " and key row " + std::to_string(b.k_row) + " of " + std::to_string(b.seq_rows) + ", positions " +
                      std::to_string(b.q_position) + " and " + std::to_string(b.k_position) +
                      "): the rows must lie in the sequence's and the first query must see a key");
  }
  Geometry g = flash::geometry(AttentionShape{b.batch, b.rows, b.heads, b.kv_heads, b.head_dim}, q, dout);  // checks the rest
  g.keys = g.seq;
  g.diagonal = static_cast<int>(diagonal < b.rows ? diagonal : b.rows);  // from `rows` on every key is seen: the same mask
  g.kv_stride = 2 * b.kv_heads * b.head_dim;
  g.k_col = 0;
  g.v_col = b.kv_heads * b.head_dim;
  g.dq_stride = b.heads * b.head_dim;
  g.q_rows = g.kv_rows = b.seq_rows;
  g.vec_qkv = b.head_dim % 8 == 0 && aligned16(q) && aligned16(kv);  // every row pitch and column is then a multiple of 8
  return g;
}

int64_t qkv_stride(const AttentionBlock& b) { return (b.heads + 2 * b.kv_heads) * b.head_dim; }
int64_t kv_stride(const AttentionBlock& b) { return 2 * b.kv_heads * b.head_dim; }
int64_t out_stride(const AttentionBlock& b) { return b.heads * b.head_dim; }

// One warp per (batch, head, block row): merge_attention_block of kernels/cpu/attention_blocks.cpp.
__global__ void merge_kernel(float* out, float* lse, const float* out_b, const float* lse_b, int64_t seq_rows, int64_t rows,
                             int64_t q_row, int heads, int head_dim, int64_t total) {
  const int64_t w = static_cast<int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  if (w >= total) return;
  const int lane = threadIdx.x % 32;
  const int64_t row = q_row + w % rows, bh = w / rows, b = bh / heads, h = bh % heads;
  const int64_t at = bh * seq_rows + row;
  const float running = lse[at], block = lse_b[at];
  if (block == -INFINITY) return;  // the block saw nothing for this row (not in ring attention's blocks)
  const int64_t offset = (b * seq_rows + row) * heads * head_dim + static_cast<int64_t>(h) * head_dim;
  float* o = out + offset;
  const float* ob = out_b + offset;
  float merged = block;
  if (running == -INFINITY) {
    for (int c = lane; c < head_dim; c += 32) o[c] = ob[c];
  } else {
    const float top = fmaxf(running, block);
    merged = top + logf(expf(running - top) + expf(block - top));
    const float keep = expf(running - merged), add = expf(block - merged);
    for (int c = lane; c < head_dim; c += 32) o[c] = keep * o[c] + add * ob[c];
  }
  __syncwarp();  // every lane has read lse[at]
  if (lane == 0) lse[at] = merged;
}

__global__ void fp32_to_bf16_columns_kernel(const float* src, int64_t rows, int64_t cols, bf16* dst, int64_t dst_stride) {
  for (int64_t i = global_thread(); i < rows * cols; i += grid_threads()) {
    dst[(i / cols) * dst_stride + i % cols] = __float2bfloat16(src[i]);
  }
}

}  // namespace

void attention_block_forward(const bf16* qkv, const bf16* kv, float* out, float* lse, const AttentionBlock& block,
                             cudaStream_t stream) {
  const bf16* q = qkv + block.q_row * qkv_stride(block);
  const bf16* k = kv + block.k_row * kv_stride(block);
  const Geometry g = block_geometry(block, q, k, nullptr);
  flash::launch_forward(q, k, nullptr, out + block.q_row * out_stride(block), lse + block.q_row, g, block.batch, stream);
}

void attention_block_merge(float* out, float* lse, const float* out_b, const float* lse_b, const AttentionBlock& block,
                           cudaStream_t stream) {
  const int64_t total = block.batch * block.heads * block.rows;
  if (total <= 0) return;
  merge_kernel<<<static_cast<unsigned>((total + 7) / 8), 256, 0, stream>>>(out, lse, out_b, lse_b, block.seq_rows, block.rows, block.q_row,
                                                                          static_cast<int>(block.heads), static_cast<int>(block.head_dim),
                                                                          total);
  check_launch("attention_block_merge");
}

void attention_row_dot(const bf16* dout, const bf16* out, float* drow, const AttentionShape& shape, cudaStream_t stream) {
  const Geometry g = flash::geometry(shape, out, dout);
  flash::launch_row_dot(dout, out, drow, g, shape.batch, stream);
}

void attention_block_backward(const bf16* dout, const bf16* qkv, const bf16* kv, const float* lse, const float* drow, float* dq,
                              float* dkv, const AttentionBlock& block, cudaStream_t stream) {
  const bf16* q = qkv + block.q_row * qkv_stride(block);
  const bf16* k = kv + block.k_row * kv_stride(block);
  const bf16* d_out = dout + block.q_row * out_stride(block);
  const Geometry g = block_geometry(block, q, k, d_out);
  flash::Gradients grads;
  grads.dq_fp32 = dq + block.q_row * out_stride(block);
  grads.dkv_fp32 = dkv + block.k_row * kv_stride(block);
  flash::launch_backward(d_out, q, k, lse + block.q_row, drow + block.q_row, grads, g, block.batch, stream);
}

void fp32_to_bf16_columns(const float* src, int64_t rows, int64_t cols, bf16* dst, int64_t dst_stride, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  fp32_to_bf16_columns_kernel<<<grid_for(rows * cols), kThreads, 0, stream>>>(src, rows, cols, dst, dst_stride);
  check_launch("fp32_to_bf16_columns");
}

}  // namespace trainsim::cuda
