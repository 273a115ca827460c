// Context parallelism's attention on the GPU: the CUDA twin of runtime/cpu/ring_attention.hpp
// (Megatron-Core / Transformer Engine's p2p ring). Each sequence is cut into 2 x cp chunks and CP
// rank r holds chunks r and 2cp - 1 - r; at each of cp steps the rank attends its queries to the
// K, V block it holds (its own first, then each previous rank's), chunk against chunk (skipped where
// every key comes later, causal on the same chunk, full where earlier), folds each block into the
// running output by log-sum-exp (fp32), and passes the block to the next rank (ncclSend / ncclRecv
// in one group over the CP communicator, double-buffered). The backward passes K, V with their fp32
// gradients dK, dV round the ring, each gradient going home after the last step. Everything runs
// on the compute stream: the transfers do not overlap the attention (correctness first).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/kernels.cuh"
#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/nccl_groups.hpp"
#include "runtime/token_data.hpp"

namespace trainsim::cuda {

// The blocks CP rank `rank` computes at the ring step where it holds CP rank `source`'s K, V: its
// two query chunks against the source's two key chunks, in ring_attention.cpp's order (first query
// chunk, then second; first key chunk, then second), leaving out pairs where every key comes later.
// `local`: the rank's attention shape (seq: its seq_len / cp rows of each sequence, two chunks).
std::vector<AttentionBlock> ring_step_blocks(const AttentionShape& local, int64_t cp, int64_t rank, int64_t source);

// The rows of `batch` (sequences of seq_len rows) at `positions` of each sequence, in order: what a
// CP rank trains on (positions: runtime::context_positions), as the CPU trainer's micro_batches picks them.
runtime::TokenBatch context_rows(const runtime::TokenBatch& batch, int64_t seq_len, const std::vector<int32_t>& positions);

// cpu_model.cpp's positions_ on the device: the true position of each of a sequence's seq_len / cp
// rows on CP rank `cp_rank` (its two chunks), int32. Empty with cp 1 (row r is position r % seq).
DeviceBuffer<int32_t> device_context_positions(int64_t seq_len, int64_t cp, int64_t cp_rank, DeviceArena& arena);

class CudaRingAttention {
 public:
  // `cp`: the CP communicator (this rank is cp.rank() of cp.size() > 1); `local`: this rank's
  // attention shape. Allocates the ring's workspaces from `arena`; the transfers are timed on `clock`.
  CudaRingAttention(const NcclComm& cp, const AttentionShape& local, DeviceArena& arena, EventClock& clock, cudaStream_t stream);

  // qkv (T, (heads + 2 kv_heads) d), T = batch x seq rows in context_positions order. Writes out
  // (T, heads d): the causal attention of these queries over every earlier position of the sequence
  // on any CP rank, and lse (batch x heads x seq, fp32) of the merged softmax. Collective over CP;
  // `kind`: what the transfers count as (the TP kind of the forward or backward around it).
  void forward(const bf16* qkv, bf16* out, float* lse, SpanKind kind);
  // Writes dqkv (qkv's layout) given dout and forward's out and lse; dK, dV gather the gradient
  // from every CP rank whose queries read them. Collective over CP.
  void backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, bf16* dqkv, SpanKind kind);

 private:
  struct Transfer {
    const void* send;
    void* receive;
    size_t count;
    ncclDataType_t type;
  };
  // Sends each transfer's block to the next CP rank and receives the previous rank's, in one group.
  void shift(const std::vector<Transfer>& transfers, SpanKind kind);
  void load_own_kv(const bf16* qkv, bf16* kv);  // qkv's K and V columns into the (T, 2 kv d) block
  int source_at(int step) const { return (cp_.rank() - step + cp_.size()) % cp_.size(); }

  const NcclComm& cp_;
  AttentionShape local_;
  int64_t tokens_, kv_width_;  // T; 2 kv_heads d
  EventClock& clock_;
  cudaStream_t stream_;
  DeviceBuffer<bf16> kv_[2];       // (T, 2 kv d) [K | V]: the block held and the one arriving
  DeviceBuffer<float> dkv_[2];     // (T, 2 kv d) [dK | dV] fp32, travelling with it (backward)
  DeviceBuffer<float> acc_;        // (T, heads d) fp32: the running output (forward) or dQ (backward)
  DeviceBuffer<float> partial_;    // (T, heads d) fp32: a block's output (forward)
  DeviceBuffer<float> partial_lse_, drow_;  // (batch x heads x seq): a block's lse; D = rowsum(dO O)
};

}  // namespace trainsim::cuda
