// The expert-parallel group of a GPU stage's MoE layers (the CUDA twin of runtime/cpu/ep_group.hpp):
// the per-expert counts exchanged on the host (MPI_Alltoall over the group's MPI communicator: the
// host sizes the transfers and the experts' GEMMs from them), and the all-to-all of bf16 token
// rows as one ncclSend / ncclRecv per peer with rows to move, all in one NCCL group, on the compute
// stream (the layer waits for them), each timed as a span of the given kind (the CPU runtime
// reports EP time in the TP phase). A group of one rank hands the rows back (a device copy).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/nccl_groups.hpp"

namespace trainsim::cuda {

class EpCollectives {
 public:
  // `comm`: the EP group's NCCL communicator (none for a group of one); `group`: the same ranks in MPI.
  EpCollectives(const NcclComm& comm, MPI_Comm group, EventClock& clock, cudaStream_t stream)
      : comm_(comm), group_(group), clock_(clock), stream_(stream) {}

  int size() const { return comm_.size(); }
  int rank() const { return comm_.rank(); }

  // `send` holds size() blocks of `per_rank` counts, block d for rank d; returns the blocks received,
  // block s from rank s. Host only; every rank of the group must call it.
  std::vector<int64_t> all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) const;
  // `rows` holds send_rows[d] rows of `cols` for rank d, in rank order; `out` gets recv_rows[s] rows
  // from each rank s, in rank order. recv_rows must be what the others send this rank.
  void all_to_all_rows(const __nv_bfloat16* rows, const std::vector<int64_t>& send_rows, __nv_bfloat16* out,
                       const std::vector<int64_t>& recv_rows, int64_t cols, SpanKind kind);

 private:
  const NcclComm& comm_;
  MPI_Comm group_;
  EventClock& clock_;
  cudaStream_t stream_;
};

}  // namespace trainsim::cuda
