// The rank grid of a plan as MPI communicators, which both backends build first: TP, CP, DP,
// DP x CP, EP and expert DP, the pipeline neighbours, the tied-embedding pair of first and last
// stage (Megatron's order, plan/rank_grid.hpp); the first error any rank met; the wall clock the
// runtimes time with. The collectives over these communicators are each backend's own.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "plan/parallel_plan.hpp"

namespace trainsim::runtime {

// Every rank of `world` learns whether any failed: the lowest failing rank and its message, or
// nothing when none did. Collective (every rank must call it).
struct RankError {
  int rank = -1;
  std::string message;
};
std::optional<RankError> first_error(MPI_Comm world, const std::optional<std::string>& error);

struct RankGrid {
  MPI_Comm world = MPI_COMM_WORLD;  // the job's ranks (a sub-communicator in parity tests)
  int world_rank = 0, world_size = 1;
  int64_t tp_rank = 0, cp_rank = 0, dp_rank = 0, pp_rank = 0;
  MPI_Comm tp = MPI_COMM_NULL, cp = MPI_COMM_NULL, dp = MPI_COMM_NULL;
  // dp_cp: the dp x cp ranks of one (tp, pp), rank cp + cp x dp (Megatron's dp_cp group), over
  // which gradients are reduced and ZeRO shards: every CP rank holds the same weights.
  MPI_Comm dp_cp = MPI_COMM_NULL;
  MPI_Comm model = MPI_COMM_NULL;      // tp x pp of one replica (one cp rank of one dp rank)
  // MoE (plan/rank_grid's kEp, kExpertDp): ep consecutive ranks of a stage's tp x cp x dp form an EP
  // group (ep_rank: the rank's place in it, whose experts it holds); the stage's ranks with the same
  // ep_rank hold the same experts and reduce their gradients (expert_dp; with ep 1, dp x cp).
  int64_t ep_rank = 0;
  MPI_Comm ep = MPI_COMM_NULL, expert_dp = MPI_COMM_NULL;
  MPI_Comm embedding = MPI_COMM_NULL;  // first and last stage of one (tp, cp, dp) (pp > 1, tied embeddings only)
  int prev_stage = -1, next_stage = -1;  // world ranks of the pipeline neighbours
  // Pipeline stages and model chunks per stage (vpp with the interleaved schedule, else 1), and the
  // world ranks of the stages before and after this one on the ring (pp > 1).
  int64_t stages = 1, chunks = 1;
  int ring_prev = -1, ring_next = -1;

  // Where chunk `chunk`'s input activation comes from and its output goes to: the world rank of
  // virtual stage chunk x pp + pp_rank -/+ 1, or -1 at the model's ends.
  int input_from(int64_t chunk) const { return chunk * stages + pp_rank > 0 ? ring_prev : -1; }
  int output_to(int64_t chunk) const { return chunk * stages + pp_rank < stages * chunks - 1 ? ring_next : -1; }

  // `tied_embeddings`: the first and last stage share the token embedding (the embedding group).
  static RankGrid build(const ParallelPlan& plan, MPI_Comm world, bool tied_embeddings = true);
  void release();
};

// Seconds on a monotonic clock (std::chrono::steady_clock).
double wall_s();

}  // namespace trainsim::runtime
