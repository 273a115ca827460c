// CudaRingAttention and the ring's host arithmetic; see cuda_ring_attention.hpp. Each step's
// comment names its CPU twin in runtime/cpu/ring_attention.cpp.
#include "runtime/cuda/cuda_ring_attention.hpp"

#include <limits>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "runtime/context_chunks.hpp"

namespace trainsim::cuda {

std::vector<AttentionBlock> ring_step_blocks(const AttentionShape& local, int64_t cp, int64_t rank, int64_t source) {
  TRAINSIM_ASSERT(local.seq % 2 == 0, "a CP rank holds two chunks of equal length of every sequence");
  const int64_t chunk = local.seq / 2;
  const runtime::ContextChunks mine = runtime::context_chunks(cp, rank), theirs = runtime::context_chunks(cp, source);
  const int64_t query_chunks[2] = {mine.first, mine.second}, key_chunks[2] = {theirs.first, theirs.second};
  std::vector<AttentionBlock> blocks;
  for (int64_t qa = 0; qa < 2; ++qa) {
    for (int64_t ka = 0; ka < 2; ++ka) {
      if (key_chunks[ka] > query_chunks[qa]) continue;  // chunk_mask: every key comes later
      AttentionBlock b;
      b.batch = local.batch;
      b.heads = local.heads;
      b.kv_heads = local.kv_heads;
      b.head_dim = local.head_dim;
      b.seq_rows = local.seq;
      b.rows = chunk;
      b.q_row = qa * chunk;
      b.k_row = ka * chunk;
      b.q_position = query_chunks[qa] * chunk;  // the same chunk: causal; an earlier one: every key seen
      b.k_position = key_chunks[ka] * chunk;
      blocks.push_back(b);
    }
  }
  return blocks;
}

runtime::TokenBatch context_rows(const runtime::TokenBatch& batch, int64_t seq_len, const std::vector<int32_t>& positions) {
  runtime::TokenBatch out;
  const size_t sequences = batch.tokens.size() / static_cast<size_t>(seq_len);
  out.tokens.reserve(sequences * positions.size());
  out.targets.reserve(sequences * positions.size());
  for (size_t j = 0; j < sequences; ++j) {
    for (const int32_t p : positions) {
      const size_t at = j * static_cast<size_t>(seq_len) + static_cast<size_t>(p);
      out.tokens.push_back(batch.tokens[at]);
      out.targets.push_back(batch.targets[at]);
    }
  }
  return out;
}

DeviceBuffer<int32_t> device_context_positions(int64_t seq_len, int64_t cp, int64_t cp_rank, DeviceArena& arena) {
  if (cp == 1) return {};
  const std::vector<int32_t> positions = runtime::context_positions(seq_len, cp, cp_rank);
  DeviceBuffer<int32_t> out(arena, static_cast<int64_t>(positions.size()), "context-parallel positions");
  check_cuda(cudaMemcpy(out.data(), positions.data(), out.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (context-parallel positions)");
  return out;
}

CudaRingAttention::CudaRingAttention(const NcclComm& cp, const AttentionShape& local, DeviceArena& arena, EventClock& clock,
                                     cudaStream_t stream)
    : cp_(cp), local_(local), tokens_(local.batch * local.seq), kv_width_(2 * local.kv_heads * local.head_dim), clock_(clock),
      stream_(stream) {
  TRAINSIM_ASSERT(cp.active() && cp.size() > 1, "ring attention needs a CP communicator of more than one rank");
  const int64_t rows_width = local.heads * local.head_dim, lse_count = local.batch * local.heads * local.seq;
  for (int i = 0; i < 2; ++i) {
    kv_[i] = DeviceBuffer<bf16>(arena, tokens_ * kv_width_, "ring attention: K, V block");
    dkv_[i] = DeviceBuffer<float>(arena, tokens_ * kv_width_, "ring attention: dK, dV block");
  }
  acc_ = DeviceBuffer<float>(arena, tokens_ * rows_width, "ring attention: fp32 output / dQ");
  partial_ = DeviceBuffer<float>(arena, tokens_ * rows_width, "ring attention: block output");
  partial_lse_ = DeviceBuffer<float>(arena, lse_count, "ring attention: block lse");
  drow_ = DeviceBuffer<float>(arena, lse_count, "ring attention: rowsum(dO O)");
}

void CudaRingAttention::load_own_kv(const bf16* qkv, bf16* kv) {
  const size_t width = (local_.heads + 2 * local_.kv_heads) * local_.head_dim;
  check_cuda(cudaMemcpy2DAsync(kv, static_cast<size_t>(kv_width_) * sizeof(bf16), qkv + local_.heads * local_.head_dim,
                               width * sizeof(bf16), static_cast<size_t>(kv_width_) * sizeof(bf16), static_cast<size_t>(tokens_),
                               cudaMemcpyDeviceToDevice, stream_),
             "cudaMemcpy2DAsync (ring attention: this rank's K, V)");
}

void CudaRingAttention::shift(const std::vector<Transfer>& transfers, SpanKind kind) {
  const int next = (cp_.rank() + 1) % cp_.size(), previous = (cp_.rank() + cp_.size() - 1) % cp_.size();
  // GPU-CHECK: these sends and receives run on the compute stream while a DP bucket may be reducing
  // on the reduce stream over the dp x cp communicator (ZeRO-3: also its gathers on the gather
  // stream), whose ranks include this CP group's: with cp 2 x dp 2 and dp_overlap, and with cp 2
  // ZeRO-3, watch for a hang under NCCL_DEBUG=WARN, as for the TP collectives. With cp 2 the next
  // and the previous rank are the same peer (a send and a receive to it in one group).
  const int span = clock_.begin(stream_);
  check_nccl(ncclGroupStart(), "ncclGroupStart (cp ring)");
  for (const Transfer& t : transfers) {
    check_nccl(ncclSend(t.send, t.count, t.type, next, cp_.get(), stream_), "ncclSend (cp ring, to the next CP rank)");
    check_nccl(ncclRecv(t.receive, t.count, t.type, previous, cp_.get(), stream_), "ncclRecv (cp ring, from the previous CP rank)");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd (cp ring)");
  clock_.end(span, kind, stream_);
}

// ring_attention: each step's blocks against the K, V held, merged by log-sum-exp, then passed on.
void CudaRingAttention::forward(const bf16* qkv, bf16* out, float* lse, SpanKind kind) {
  const int64_t rows_width = local_.heads * local_.head_dim;
  load_own_kv(qkv, kv_[0].data());
  check_cuda(cudaMemsetAsync(acc_.data(), 0, acc_.bytes(), stream_), "cudaMemsetAsync (ring attention output)");
  fill_fp32(lse, -std::numeric_limits<float>::infinity(), local_.batch * local_.heads * local_.seq, stream_);
  const size_t count = static_cast<size_t>(tokens_ * kv_width_);
  int held = 0;
  for (int step = 0; step < cp_.size(); ++step) {
    for (const AttentionBlock& b : ring_step_blocks(local_, cp_.size(), cp_.rank(), source_at(step))) {
      attention_block_forward(qkv, kv_[held].data(), partial_.data(), partial_lse_.data(), b, stream_);
      attention_block_merge(acc_.data(), lse, partial_.data(), partial_lse_.data(), b, stream_);
    }
    if (step + 1 < cp_.size()) {
      shift({{kv_[held].data(), kv_[1 - held].data(), count, ncclBfloat16}}, kind);
      held = 1 - held;
    }
  }
  fp32_to_bf16(acc_.data(), out, tokens_ * rows_width, stream_);
}

// ring_attention_backward: D from the merged output, then each step's blocks add their dQ into this
// rank's accumulator and their dK, dV into the travelling block's, which goes on with K, V.
void CudaRingAttention::backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, bf16* dqkv, SpanKind kind) {
  attention_row_dot(dout, out, drow_.data(), local_, stream_);
  load_own_kv(qkv, kv_[0].data());
  check_cuda(cudaMemsetAsync(dkv_[0].data(), 0, dkv_[0].bytes(), stream_), "cudaMemsetAsync (ring attention dK, dV)");
  check_cuda(cudaMemsetAsync(acc_.data(), 0, acc_.bytes(), stream_), "cudaMemsetAsync (ring attention dQ)");
  const size_t count = static_cast<size_t>(tokens_ * kv_width_);
  int held = 0;
  for (int step = 0; step < cp_.size(); ++step) {
    for (const AttentionBlock& b : ring_step_blocks(local_, cp_.size(), cp_.rank(), source_at(step))) {
      attention_block_backward(dout, qkv, kv_[held].data(), lse, drow_.data(), acc_.data(), dkv_[held].data(), b, stream_);
    }
    if (step + 1 < cp_.size()) {
      shift({{kv_[held].data(), kv_[1 - held].data(), count, ncclBfloat16}, {dkv_[held].data(), dkv_[1 - held].data(), count, ncclFloat}},
            kind);
      held = 1 - held;
    }
  }
  // The last step's block belongs to the next rank: its dK, dV go home (this rank's arrive).
  shift({{dkv_[held].data(), dkv_[1 - held].data(), count, ncclFloat}}, kind);
  held = 1 - held;
  const int64_t q_width = local_.heads * local_.head_dim, width = q_width + kv_width_;
  fp32_to_bf16_columns(acc_.data(), tokens_, q_width, dqkv, width, stream_);
  fp32_to_bf16_columns(dkv_[held].data(), tokens_, kv_width_, dqkv + q_width, width, stream_);
}

}  // namespace trainsim::cuda
