// The MPI side of the CPU backend: the TP group, CP ring and EP group the model calls, over the
// communicators of the rank grid (runtime/rank_grid.hpp), timing every collective into the phase clock.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "plan/parallel_plan.hpp"
#include "runtime/cpu/cp_group.hpp"
#include "runtime/cpu/ep_group.hpp"
#include "runtime/cpu/tp_group.hpp"
#include "runtime/rank_grid.hpp"

namespace trainsim::cpu {

class MpiTpGroup final : public TpGroup {
 public:
  MpiTpGroup(MPI_Comm comm, double* seconds) : comm_(comm), seconds_(seconds) {
    MPI_Comm_size(comm, &size_);
    MPI_Comm_rank(comm, &rank_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_reduce(Matrix& m) override;
  void all_reduce_max(Matrix& m) override;
  Matrix all_gather_rows(const Matrix& shard) override;
  Matrix reduce_scatter_rows(const Matrix& full) override;

 private:
  MPI_Comm comm_;
  double* seconds_;  // where the time spent goes
  int size_ = 1, rank_ = 0;
};

class MpiCpGroup final : public CpGroup {
 public:
  MpiCpGroup(MPI_Comm comm, double* seconds) : comm_(comm), seconds_(seconds) {
    MPI_Comm_size(comm, &size_);
    MPI_Comm_rank(comm, &rank_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  Matrix ring_shift(const Matrix& block) override;  // MPI_Sendrecv to the next rank, from the previous

 private:
  MPI_Comm comm_;
  double* seconds_;
  int size_ = 1, rank_ = 0;
};

class MpiEpGroup final : public EpGroup {
 public:
  MpiEpGroup(MPI_Comm comm, double* seconds) : comm_(comm), seconds_(seconds) {
    MPI_Comm_size(comm, &size_);
    MPI_Comm_rank(comm, &rank_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<int64_t> all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) override;  // MPI_Alltoall
  Matrix all_to_all_rows(const Matrix& rows, const std::vector<int64_t>& send_rows, const std::vector<int64_t>& recv_rows) override;  // MPI_Alltoallv

 private:
  MPI_Comm comm_;
  double* seconds_;
  int size_ = 1, rank_ = 0;
};

}  // namespace trainsim::cpu
