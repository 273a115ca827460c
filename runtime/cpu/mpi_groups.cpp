// Communicators by MPI_Comm_split on the Megatron rank order (plan/rank_grid), and timed TP
// collectives, CP ring transfers and EP all-to-alls.
#include "runtime/cpu/mpi_groups.hpp"

#include <chrono>
#include <climits>

#include "plan/rank_grid.hpp"

namespace trainsim::cpu {

void MpiTpGroup::all_reduce(Matrix& m) {
  if (size_ == 1) return;
  const double start = runtime::wall_s();
  MPI_Allreduce(MPI_IN_PLACE, m.data(), static_cast<int>(m.size()), MPI_FLOAT, MPI_SUM, comm_);
  *seconds_ += runtime::wall_s() - start;
}

void MpiTpGroup::all_reduce_max(Matrix& m) {
  if (size_ == 1) return;
  const double start = runtime::wall_s();
  MPI_Allreduce(MPI_IN_PLACE, m.data(), static_cast<int>(m.size()), MPI_FLOAT, MPI_MAX, comm_);
  *seconds_ += runtime::wall_s() - start;
}

Matrix MpiTpGroup::all_gather_rows(const Matrix& shard) {
  if (size_ == 1) return shard;
  const double start = runtime::wall_s();
  Matrix full(shard.rows() * size_, shard.cols());
  MPI_Allgather(shard.data(), static_cast<int>(shard.size()), MPI_FLOAT, full.data(), static_cast<int>(shard.size()),
                MPI_FLOAT, comm_);
  *seconds_ += runtime::wall_s() - start;
  return full;
}

Matrix MpiTpGroup::reduce_scatter_rows(const Matrix& full) {
  if (size_ == 1) return full;
  const double start = runtime::wall_s();
  Matrix shard(full.rows() / size_, full.cols());
  MPI_Reduce_scatter_block(full.data(), shard.data(), static_cast<int>(shard.size()), MPI_FLOAT, MPI_SUM, comm_);
  *seconds_ += runtime::wall_s() - start;
  return shard;
}

Matrix MpiCpGroup::ring_shift(const Matrix& block) {
  if (size_ == 1) return block;
  const double start = runtime::wall_s();
  Matrix received(block.rows(), block.cols());
  const int count = static_cast<int>(block.size());
  MPI_Sendrecv(block.data(), count, MPI_FLOAT, (rank_ + 1) % size_, 0, received.data(), count, MPI_FLOAT, (rank_ + size_ - 1) % size_, 0,
               comm_, MPI_STATUS_IGNORE);
  *seconds_ += runtime::wall_s() - start;
  return received;
}

std::vector<int64_t> MpiEpGroup::all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) {
  if (size_ == 1) return send;
  const double start = runtime::wall_s();
  std::vector<int64_t> received(send.size());
  MPI_Alltoall(send.data(), static_cast<int>(per_rank), MPI_INT64_T, received.data(), static_cast<int>(per_rank), MPI_INT64_T, comm_);
  *seconds_ += runtime::wall_s() - start;
  return received;
}

Matrix MpiEpGroup::all_to_all_rows(const Matrix& rows, const std::vector<int64_t>& send_rows, const std::vector<int64_t>& recv_rows) {
  if (size_ == 1) return rows;
  const double start = runtime::wall_s();
  const int64_t cols = rows.cols();
  std::vector<int> send_counts(static_cast<size_t>(size_)), send_at(static_cast<size_t>(size_)), recv_counts(static_cast<size_t>(size_)),
      recv_at(static_cast<size_t>(size_));
  int64_t sent = 0, received = 0;
  for (size_t d = 0; d < static_cast<size_t>(size_); ++d) {
    send_counts[d] = static_cast<int>(send_rows[d] * cols);
    send_at[d] = static_cast<int>(sent * cols);
    sent += send_rows[d];
    recv_counts[d] = static_cast<int>(recv_rows[d] * cols);
    recv_at[d] = static_cast<int>(received * cols);
    received += recv_rows[d];
  }
  Matrix out(received, cols);
  MPI_Alltoallv(rows.data(), send_counts.data(), send_at.data(), MPI_FLOAT, out.data(), recv_counts.data(), recv_at.data(), MPI_FLOAT, comm_);
  *seconds_ += runtime::wall_s() - start;
  return out;
}

}  // namespace trainsim::cpu
