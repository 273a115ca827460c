// NcclComm and NcclGroups::build; see nccl_groups.hpp.
#include "runtime/cuda/nccl_groups.hpp"

#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "runtime/cuda/cuda_device.hpp"

namespace trainsim::cuda {

NcclComm NcclComm::over(MPI_Comm group, const std::string& name) {
  NcclComm c;
  if (group == MPI_COMM_NULL) return c;
  MPI_Comm_size(group, &c.size_);
  MPI_Comm_rank(group, &c.rank_);
  if (c.size_ == 1) return c;
  // Rank 0's status goes with the id: if ncclGetUniqueId fails there (e.g. no usable network
  // interface), every rank of the group throws, instead of the others waiting in MPI_Bcast.
  struct {
    ncclUniqueId id{};
    int status = ncclSuccess;
  } root;
  if (c.rank_ == 0) root.status = ncclGetUniqueId(&root.id);
  MPI_Bcast(&root, static_cast<int>(sizeof root), MPI_BYTE, 0, group);
  check_nccl(static_cast<ncclResult_t>(root.status), "ncclGetUniqueId for the " + name + " group (on its rank 0)");
  check_nccl(ncclCommInitRank(&c.comm_, c.size_, root.id, c.rank_),
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
MPI_Comm pipeline_pair(const runtime::RankGrid& grid, const ParallelPlan& plan, bool odd) {
  const int64_t stage = grid.pp_rank;
  const int64_t partner = odd ? (stage % 2 == 1 ? stage + 1 : stage - 1) : (stage % 2 == 0 ? stage + 1 : stage - 1);
  const bool paired = partner >= 0 && partner < plan.pp;
  const int64_t pair = odd ? (stage + 1) / 2 : stage / 2;
  const int64_t color = grid.tp_rank + plan.tp * (grid.cp_rank + plan.cp * (grid.dp_rank + plan.dp * pair));
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Comm_split(grid.world, paired ? static_cast<int>(color) : MPI_UNDEFINED, static_cast<int>(stage), &out);
  return out;
}

}  // namespace

NcclGroups NcclGroups::build(const runtime::RankGrid& grid, const ParallelPlan& plan) {
  NcclGroups g;
  // The same order on every rank: each ncclCommInitRank waits for its whole group. The groups of
  // one phase are disjoint; the ranks agree after each phase, so that a group whose creation failed
  // (on its ranks: e.g. a duplicate GPU, an unusable network) stops every rank, rather than leaving
  // the ranks of the other groups waiting for it in the next phase's ncclCommInitRank.
  const auto attempt = [](const std::function<void()>& create) -> std::optional<std::string> {
    try {
      create();
    } catch (const DeviceError& e) {
      return e.what();
    }
    return std::nullopt;
  };
  agree_on_device_error(grid.world, attempt([&] { g.tp = NcclComm::over(grid.tp, "tp"); }));
  agree_on_device_error(grid.world, attempt([&] { g.cp = NcclComm::over(grid.cp, "cp"); }));
  agree_on_device_error(grid.world, attempt([&] { g.dp = NcclComm::over(grid.dp_cp, "dp"); }));
  if (plan.zero_stage >= 3) agree_on_device_error(grid.world, attempt([&] { g.dp_gather = NcclComm::over(grid.dp_cp, "dp gather"); }));
  if (plan.ep > 1) {
    agree_on_device_error(grid.world, attempt([&] { g.ep = NcclComm::over(grid.ep, "ep"); }));
    agree_on_device_error(grid.world, attempt([&] { g.expert_dp = NcclComm::over(grid.expert_dp, "expert dp"); }));
  }
  agree_on_device_error(grid.world, attempt([&] { g.embedding = NcclComm::over(grid.embedding, "tied-embedding"); }));
  for (const bool odd : {false, true}) {
    MPI_Comm pair = pipeline_pair(grid, plan, odd);
    const std::optional<std::string> error = attempt([&] {
      if (pair == MPI_COMM_NULL) return;
      int rank = 0;
      MPI_Comm_rank(pair, &rank);
      NcclComm up = NcclComm::over(pair, "pipeline activations");
      NcclComm down = NcclComm::over(pair, "pipeline gradients");
      if (rank == 0) {
        g.activations_to_next = std::move(up);
        g.gradients_from_next = std::move(down);
      } else {
        g.activations_from_prev = std::move(up);
        g.gradients_to_prev = std::move(down);
      }
    });
    if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
    agree_on_device_error(grid.world, error);
  }
  if (grid.chunks > 1 && plan.pp > 1) {
    const bool end = grid.pp_rank == 0 || grid.pp_rank == plan.pp - 1;
    MPI_Comm ring = MPI_COMM_NULL;
    MPI_Comm_split(grid.world, end ? static_cast<int>(grid.tp_rank + plan.tp * (grid.cp_rank + plan.cp * grid.dp_rank)) : MPI_UNDEFINED,
                   static_cast<int>(grid.pp_rank), &ring);
    const std::optional<std::string> error = attempt([&] {
      if (ring == MPI_COMM_NULL) return;
      g.wrap_activations = NcclComm::over(ring, "pipeline ring activations");
      g.wrap_gradients = NcclComm::over(ring, "pipeline ring gradients");
    });
    if (ring != MPI_COMM_NULL) MPI_Comm_free(&ring);
    agree_on_device_error(grid.world, error);
  }
  return g;
}

}  // namespace trainsim::cuda
