// The tensor-parallel collectives of a GPU model stage, on the compute stream (they sit on the
// critical path), each timed as a span of the current kind: all-reduce of partial sums (bf16
// activations; fp32 gradients and cross-entropy statistics; an fp32 max), and with sequence
// parallelism the all-gather / reduce-scatter of token rows (rank r holds rows [r * rows,
// (r + 1) * rows)). A group of one rank copies or does nothing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/nccl_groups.hpp"

namespace trainsim::cuda {

class TpCollectives {
 public:
  TpCollectives(const NcclComm& comm, EventClock& clock, cudaStream_t stream) : comm_(comm), clock_(clock), stream_(stream) {}

  int size() const { return comm_.size(); }
  int rank() const { return comm_.rank(); }
  void set_kind(SpanKind kind) { kind_ = kind; }  // what the following spans count as
  SpanKind kind() const { return kind_; }

  void all_reduce(__nv_bfloat16* x, int64_t count);
  // shard: (rows, cols) -> full: (size * rows, cols)
  void all_gather_rows(const __nv_bfloat16* shard, __nv_bfloat16* full, int64_t shard_count);
  // full: (size * rows, cols) summed over ranks -> this rank's (rows, cols)
  void reduce_scatter_rows(const __nv_bfloat16* full, __nv_bfloat16* shard, int64_t shard_count);
  // fp32 tensors summed in place, all in one NCCL group (one launch).
  struct Fp32Range {
    float* data;
    int64_t count;
  };
  void all_reduce_fp32(const std::vector<Fp32Range>& ranges);
  // fp32 element-wise max over ranks, in place (the vocabulary-parallel cross-entropy's row maxima).
  void all_reduce_max_fp32(float* x, int64_t count);

 private:
  const NcclComm& comm_;
  EventClock& clock_;
  cudaStream_t stream_;
  SpanKind kind_ = SpanKind::kTpInForward;
};

}  // namespace trainsim::cuda
