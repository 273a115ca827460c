// The MPI side of the CPU runtime: the rank grid of a plan as communicators (TP, DP, the
// pipeline neighbours, the tied-embedding pair of first and last stage), and the TP group the
// model calls, timing every collective into the phase clock.
#pragma once

#include <mpi.h>

#include "plan/parallel_plan.hpp"
#include "runtime/tp_group.hpp"

namespace trainsim::cpu {

struct RankGrid {
  MPI_Comm world = MPI_COMM_WORLD;  // the job's ranks (a sub-communicator in parity tests)
  int world_rank = 0, world_size = 1;
  int64_t tp_rank = 0, dp_rank = 0, pp_rank = 0;
  MPI_Comm tp = MPI_COMM_NULL, dp = MPI_COMM_NULL, model = MPI_COMM_NULL;  // model: tp x pp of one replica
  MPI_Comm embedding = MPI_COMM_NULL;  // first and last stage of one (tp, dp) (pp > 1 only)
  int prev_stage = -1, next_stage = -1;  // world ranks of the pipeline neighbours

  static RankGrid build(const ParallelPlan& plan, MPI_Comm world);
  void release();
};

class MpiTpGroup final : public TpGroup {
 public:
  MpiTpGroup(MPI_Comm comm, double* seconds) : comm_(comm), seconds_(seconds) {
    MPI_Comm_size(comm, &size_);
    MPI_Comm_rank(comm, &rank_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_reduce(Matrix& m) override;
  Matrix all_gather_rows(const Matrix& shard) override;
  Matrix reduce_scatter_rows(const Matrix& full) override;

 private:
  MPI_Comm comm_;
  double* seconds_;  // where the time spent goes
  int size_ = 1, rank_ = 0;
};

double wall_s();

}  // namespace trainsim::cpu
