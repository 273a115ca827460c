// NcclComm and NcclGroups::build; see nccl_groups.hpp.
#include "runtime/cuda/nccl_groups.hpp"

#include <exception>
#include <utility>

#include "runtime/cuda_kernels/cuda_check.cuh"

namespace trainsim::cuda {

NcclComm NcclComm::over(MPI_Comm group, const std::string& name) {
  NcclComm c;
  if (group == MPI_COMM_NULL) return c;
  MPI_Comm_size(group, &c.size_);
  MPI_Comm_rank(group, &c.rank_);
  if (c.size_ == 1) return c;
  ncclUniqueId id{};
  if (c.rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId for the " + name + " group");
  MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, group);
  check_nccl(ncclCommInitRank(&c.comm_, c.size_, id, c.rank_),
             "ncclCommInitRank for the " + name + " group (rank " + std::to_string(c.rank_) + " of " + std::to_string(c.size_) + ")");
  return c;
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  // Unwinding from an error other ranks may not share: abort instead of the collective finalize.
  if (std::uncaught_exceptions() > 0) {
    ncclCommAbort(comm_);
  } else {
    ncclCommDestroy(comm_);
  }
}

NcclComm::NcclComm(NcclComm&& o) noexcept { *this = std::move(o); }

NcclComm& NcclComm::operator=(NcclComm&& o) noexcept {
  if (this != &o) {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    comm_ = std::exchange(o.comm_, nullptr);
    size_ = std::exchange(o.size_, 1);
    rank_ = std::exchange(o.rank_, 0);
  }
  return *this;
}

namespace {

// Pipeline neighbour pairs by MPI_Comm_split: `odd` false pairs stages (0,1), (2,3), ...; true
// pairs (1,2), (3,4), ... Returns MPI_COMM_NULL where this rank has no partner in that split.
MPI_Comm pipeline_pair(const cpu::RankGrid& grid, const ParallelPlan& plan, bool odd) {
  const int64_t stage = grid.pp_rank;
  const int64_t partner = odd ? (stage % 2 == 1 ? stage + 1 : stage - 1) : (stage % 2 == 0 ? stage + 1 : stage - 1);
  const bool paired = partner >= 0 && partner < plan.pp;
  const int64_t pair = odd ? (stage + 1) / 2 : stage / 2;
  const int64_t color = grid.tp_rank + plan.tp * (grid.dp_rank + plan.dp * pair);
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Comm_split(grid.world, paired ? static_cast<int>(color) : MPI_UNDEFINED, static_cast<int>(stage), &out);
  return out;
}

}  // namespace

NcclGroups NcclGroups::build(const cpu::RankGrid& grid, const ParallelPlan& plan) {
  NcclGroups g;
  // The same order on every rank: each ncclCommInitRank waits for its whole group.
  g.tp = NcclComm::over(grid.tp, "tp");
  g.dp = NcclComm::over(grid.dp, "dp");
  g.embedding = NcclComm::over(grid.embedding, "tied-embedding");
  for (const bool odd : {false, true}) {
    MPI_Comm pair = pipeline_pair(grid, plan, odd);
    if (pair == MPI_COMM_NULL) continue;
    int rank = 0;
    MPI_Comm_rank(pair, &rank);
    NcclComm up = NcclComm::over(pair, "pipeline activations");
    NcclComm down = NcclComm::over(pair, "pipeline gradients");
    MPI_Comm_free(&pair);
    if (rank == 0) {
      g.activations_to_next = std::move(up);
      g.gradients_from_next = std::move(down);
    } else {
      g.activations_from_prev = std::move(up);
      g.gradients_to_prev = std::move(down);
    }
  }
  return g;
}

}  // namespace trainsim::cuda
