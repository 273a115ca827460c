// NCCL communicators for a plan's rank grid (runtime/cpu/mpi_groups.hpp's RankGrid): TP, CP (the ring
// attention's), DP over dp x cp (Megatron's dp_cp group: the weights are the same on every CP rank,
// so gradients are reduced and ZeRO shards over it, as the CPU runtime's DataParallel; without CP it
// is the DP group) and the tied-embedding pair (first and last stage), and for the pipeline two per
// neighbour pair, one per direction (activations go up one, gradients come down the other), so that
// every communicator is used in one order on one stream. Each is made from the group's MPI
// communicator: ncclGetUniqueId on its rank 0, MPI_Bcast over it, ncclCommInitRank. Groups of one
// rank get no NCCL communicator.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <string>

#include "plan/parallel_plan.hpp"
#include "runtime/rank_grid.hpp"

namespace trainsim::cuda {

class NcclComm {
 public:
  NcclComm() = default;
  // Collective over `group` (which may be MPI_COMM_NULL: this rank is not in such a group).
  static NcclComm over(MPI_Comm group, const std::string& name);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  NcclComm(NcclComm&& o) noexcept;
  NcclComm& operator=(NcclComm&& o) noexcept;

  ncclComm_t get() const { return comm_; }
  int size() const { return size_; }
  int rank() const { return rank_; }
  bool active() const { return comm_ != nullptr; }  // a group of more than one rank

 private:
  ncclComm_t comm_ = nullptr;
  int size_ = 1, rank_ = 0;
};

// GPU-CHECK: the members are destroyed in reverse order, and ncclCommDestroy communicates with the
// group's other ranks in recent NCCL (pytorch/pytorch#137507). The order (the pair with the previous
// stage, then the one with the next, gradients before activations in each; then embedding, dp, cp, tp)
// has no cycle over the pipeline, but a teardown with pp >= 3 has not been seen to finish yet.
struct NcclGroups {
  NcclComm tp, cp, dp, embedding;  // dp: the dp x cp ranks of one (tp, pp)
  NcclComm dp_gather;  // ZeRO-3: the weight all-gathers, on their own stream (dp: the reduce-scatters)
  // MoE with ep > 1 (RankGrid's ep and expert_dp): the EP group's all-to-alls, and the expert
  // gradients' sums over the ranks holding the same experts (data_parallel.hpp).
  NcclComm ep, expert_dp;
  // Pipeline pairs: in each, the lower stage is rank 0 and the upper stage rank 1.
  NcclComm activations_to_next, gradients_from_next;  // with the next stage (this rank is 0)
  NcclComm activations_from_prev, gradients_to_prev;  // with the previous stage (this rank is 1)
  // Interleaved schedule: the ring's wrap between the last stage and the first (the first is rank
  // 0): activations from the last to the first, gradients back.
  NcclComm wrap_activations, wrap_gradients;

  // Collective over grid.world; the device must be selected already.
  static NcclGroups build(const runtime::RankGrid& grid, const ParallelPlan& plan);
};

}  // namespace trainsim::cuda
