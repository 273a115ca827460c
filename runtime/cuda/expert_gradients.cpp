// Expert and dense runs of the gradient buffer, their DP sums, the expert-parallel norm flags; see
// expert_gradients.hpp.
#include "runtime/cuda/expert_gradients.hpp"

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

std::vector<std::pair<int64_t, int64_t>> expert_runs(const std::vector<ParamView>& views, int64_t begin, int64_t end) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  bool previous_expert = false;  // views are in buffer order: a run continues while they are experts'
  for (const ParamView& v : views) {
    if (v.expert && previous_expert) {
      runs.back().second = v.offset + v.count();
    } else if (v.expert) {
      runs.emplace_back(v.offset, v.offset + v.count());
    }
    previous_expert = v.expert;
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [from, to] : runs) {
    const int64_t a = std::max(from, begin), b = std::min(to, end);
    if (a < b) out.emplace_back(a, b);
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> dense_runs(const std::vector<ParamView>& views, int64_t begin, int64_t end) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t at = begin;
  for (const auto& [from, to] : expert_runs(views, begin, end)) {
    if (from > at) out.emplace_back(at, from);
    at = to;
  }
  if (end > at) out.emplace_back(at, end);
  return out;
}

namespace {

void all_reduce_runs(float* grads, const std::vector<std::pair<int64_t, int64_t>>& runs, const NcclComm& comm, cudaStream_t stream,
                     const char* what) {
  if (!comm.active() || runs.empty()) return;
  check_nccl(ncclGroupStart(), std::string("ncclGroupStart (") + what + ")");
  for (const auto& [from, to] : runs) {
    if (to <= from) continue;
    check_nccl(ncclAllReduce(grads + from, grads + from, static_cast<size_t>(to - from), ncclFloat, ncclSum, comm.get(), stream),
               std::string("ncclAllReduce (") + what + ")");
  }
  check_nccl(ncclGroupEnd(), std::string("ncclGroupEnd (") + what + ")");
}

}  // namespace

void all_reduce_gradients(float* grads, const std::vector<ParamView>& views, int64_t begin, int64_t end, const NcclComm& dp,
                          const NcclComm* expert_dp, cudaStream_t stream) {
  if (expert_dp == nullptr) {
    all_reduce_runs(grads, {{begin, end}}, dp, stream, "dp gradient bucket");
    return;
  }
  // Both groups' reductions in the same order on every rank: the DP one first, then the expert-DP
  // one (a rank of both waits for the first before the second starts, on the same stream).
  // GPU-CHECK: with overlap these run on the reduce stream while the backward's EP all-to-alls run
  // on the compute stream: three communicators' kernels at once on one GPU. Run dp 4 x ep 2 with
  // overlap under a timeout to see that they co-run (no hang).
  all_reduce_runs(grads, dense_runs(views, begin, end), dp, stream, "dp gradient bucket");
  all_reduce_runs(grads, expert_runs(views, begin, end), *expert_dp, stream, "expert-dp gradient bucket");
}

bool counts_in_expert_parallel_norm(const ParamView& v, bool counts_in_replica, int dp_rank, int expert_dp_rank) {
  return counts_in_replica && (v.expert ? expert_dp_rank == 0 : dp_rank == 0);
}

}  // namespace trainsim::cuda
