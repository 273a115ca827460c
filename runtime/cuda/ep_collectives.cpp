// EpCollectives over MPI (counts) and NCCL (rows); see ep_collectives.hpp.
#include "runtime/cuda/ep_collectives.hpp"

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

std::vector<int64_t> EpCollectives::all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) const {
  TRAINSIM_ASSERT(static_cast<int64_t>(send.size()) == per_rank * size(), "EpCollectives: one block of counts per rank");
  if (size() == 1) return send;
  std::vector<int64_t> received(send.size());
  MPI_Alltoall(send.data(), static_cast<int>(per_rank), MPI_INT64_T, received.data(), static_cast<int>(per_rank), MPI_INT64_T, group_);
  return received;
}

void EpCollectives::all_to_all_rows(const __nv_bfloat16* rows, const std::vector<int64_t>& send_rows, __nv_bfloat16* out,
                                    const std::vector<int64_t>& recv_rows, int64_t cols, SpanKind kind) {
  TRAINSIM_ASSERT(static_cast<int>(send_rows.size()) == size() && static_cast<int>(recv_rows.size()) == size(),
                  "EpCollectives: one row count per rank");
  if (!comm_.active()) {
    if (send_rows[0] > 0) {
      check_cuda(cudaMemcpyAsync(out, rows, static_cast<size_t>(send_rows[0] * cols) * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice,
                                 stream_),
                 "cudaMemcpyAsync (ep all-to-all of one rank)");
    }
    return;
  }
  // As PyTorch's all_to_all_single with uneven splits: a send and a receive per peer with rows to
  // move (this rank's own block included: NCCL copies it), in one group so none waits for another.
  // GPU-CHECK: the counts come from the host exchange, so both ends agree on every pair's size; a
  // mismatch would hang in NCCL rather than fail. Run ep 2 and ep 4 layouts under a timeout.
  const int span = clock_.begin(stream_);
  check_nccl(ncclGroupStart(), "ncclGroupStart (ep all-to-all)");
  int64_t sent = 0, received = 0;
  for (int peer = 0; peer < size(); ++peer) {
    const int64_t n_send = send_rows[static_cast<size_t>(peer)], n_recv = recv_rows[static_cast<size_t>(peer)];
    if (n_send > 0) {
      check_nccl(ncclSend(rows + sent * cols, static_cast<size_t>(n_send * cols), ncclBfloat16, peer, comm_.get(), stream_),
                 "ncclSend (ep all-to-all)");
    }
    if (n_recv > 0) {
      check_nccl(ncclRecv(out + received * cols, static_cast<size_t>(n_recv * cols), ncclBfloat16, peer, comm_.get(), stream_),
                 "ncclRecv (ep all-to-all)");
    }
    sent += n_send;
    received += n_recv;
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd (ep all-to-all)");
  clock_.end(span, kind, stream_);
}

}  // namespace trainsim::cuda
