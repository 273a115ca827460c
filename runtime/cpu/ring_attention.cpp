// Ring attention over the CP group; see ring_attention.hpp. Shapes: T = B x s_local rows on this
// rank, c = s_local / 2 rows per chunk, d head_dim; the K, V block passed round the ring is
// (T, 2 kv d), in the backward (T, 4 kv d) with dK, dV.
#include "runtime/cpu/ring_attention.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "common/errors.hpp"
#include "kernels/cpu/attention_blocks.hpp"

namespace trainsim::cpu {

namespace {

// Queries of chunk `query` against keys of chunk `key` (chunk indices in the sequence): nothing
// when every key comes later, the causal diagonal on the same chunk, all of it when earlier.
std::optional<BlockMask> chunk_mask(int64_t query, int64_t key) {
  if (key > query) return std::nullopt;
  return key == query ? BlockMask::kCausal : BlockMask::kFull;
}

// Where one (sequence, query head, query chunk, key chunk) block sits: rows of the queries and
// keys in T, columns of Q in qkv, of K and V in the block passed round the ring.
struct BlockSite {
  Eigen::Index q_row, k_row, q_col, k_col, v_col;
  BlockMask mask;
};

// Calls `visit(site)` for every block of queries on this rank against keys held by CP rank `source`
// that any query sees.
template <typename Visit>
void for_each_block(const RingShape& s, int64_t rows, int64_t cp, int64_t rank, int64_t source, Visit&& visit) {
  const int64_t local = rows / s.batch, chunk = local / 2, d = s.head_dim, group = s.heads / s.kv_heads;
  const runtime::ContextChunks mine = runtime::context_chunks(cp, rank), theirs = runtime::context_chunks(cp, source);
  const int64_t query_chunks[2] = {mine.first, mine.second}, key_chunks[2] = {theirs.first, theirs.second};
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t qa = 0; qa < 2; ++qa) {
        for (int64_t ka = 0; ka < 2; ++ka) {
          const std::optional<BlockMask> mask = chunk_mask(query_chunks[qa], key_chunks[ka]);
          if (!mask) continue;
          const int64_t kv = h / group;
          visit(BlockSite{b * local + qa * chunk, b * local + ka * chunk, h * d, kv * d, (s.kv_heads + kv) * d, *mask}, h);
        }
      }
    }
  }
}

}  // namespace

Matrix ring_attention(const Matrix& qkv, const RingShape& s, CpGroup& cp, RingAttentionCache& cache) {
  const int64_t rows = qkv.rows(), chunk = rows / s.batch / 2, d = s.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Matrix out = Matrix::Zero(rows, s.heads * d);
  cache.lse = Matrix::Constant(s.heads, rows, -std::numeric_limits<float>::infinity());
  Matrix kv = qkv.rightCols(2 * s.kv_heads * d);  // this rank's K | V, then each previous rank's
  Matrix partial(chunk, d);
  std::vector<float> partial_lse(static_cast<size_t>(chunk));
  for (int step = 0; step < cp.size(); ++step) {
    const int source = (cp.rank() - step + cp.size()) % cp.size();
    for_each_block(s, rows, cp.size(), cp.rank(), source, [&](const BlockSite& b, int64_t h) {
      attention_block(qkv.block(b.q_row, b.q_col, chunk, d), kv.block(b.k_row, b.k_col, chunk, d), kv.block(b.k_row, b.v_col, chunk, d),
                      scale, b.mask, partial, partial_lse.data());
      merge_attention_block(out.block(b.q_row, b.q_col, chunk, d), &cache.lse(h, b.q_row), partial, partial_lse.data());
    });
    if (step + 1 < cp.size()) kv = cp.ring_shift(kv);
  }
  return out;
}

Matrix ring_attention_backward(const Matrix& dout, const Matrix& qkv, const Matrix& out, const RingShape& s, CpGroup& cp,
                               const RingAttentionCache& cache) {
  const int64_t rows = qkv.rows(), chunk = rows / s.batch / 2, d = s.head_dim, kv_width = s.kv_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Matrix delta(s.heads, rows);  // rowsum(dout * out) per head
  for (int64_t h = 0; h < s.heads; ++h) {
    delta.row(h) = (dout.middleCols(h * d, d).array() * out.middleCols(h * d, d).array()).rowwise().sum().transpose();
  }
  Matrix dqkv = Matrix::Zero(rows, qkv.cols());
  Matrix travel(rows, 4 * kv_width);  // [K | V | dK | dV] of the block's owner
  travel.leftCols(2 * kv_width) = qkv.rightCols(2 * kv_width);
  travel.rightCols(2 * kv_width).setZero();
  for (int step = 0; step < cp.size(); ++step) {
    const int source = (cp.rank() - step + cp.size()) % cp.size();
    for_each_block(s, rows, cp.size(), cp.rank(), source, [&](const BlockSite& b, int64_t h) {
      attention_block_backward(qkv.block(b.q_row, b.q_col, chunk, d), travel.block(b.k_row, b.k_col, chunk, d),
                               travel.block(b.k_row, b.v_col, chunk, d), dout.block(b.q_row, b.q_col, chunk, d), &cache.lse(h, b.q_row),
                               &delta(h, b.q_row), scale, b.mask, dqkv.block(b.q_row, b.q_col, chunk, d),
                               travel.block(b.k_row, 2 * kv_width + b.k_col, chunk, d), travel.block(b.k_row, 2 * kv_width + b.v_col, chunk, d));
    });
    if (step + 1 < cp.size()) travel = cp.ring_shift(travel);
  }
  // The last step's block belongs to the next rank: its dK, dV go home (all of them at once).
  const Matrix grads = travel.rightCols(2 * kv_width);
  dqkv.rightCols(2 * kv_width) = cp.ring_shift(grads);
  return dqkv;
}

}  // namespace trainsim::cpu
