// MoE expert parameters in the CUDA trainer's DP reduction and global norm, as the CPU runtime's
// runtime/cpu/data_parallel.hpp does it: with ep > 1 every EP rank holds different experts, so their
// gradients are summed over the expert-DP ranks (those holding the same experts: dp / ep of them
// at tp 1), the rest over DP; and the global norm is summed over every rank, each tensor counted on
// the first rank of the group that reduces it, so each element of the model counts once. With
// ep 1 the expert-DP ranks are the DP ranks and none of this applies. The runs are host arithmetic,
// tested without a GPU (tests/gpu/test_cuda_moe.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/cuda/nccl_groups.hpp"
#include "runtime/cuda/param_store.hpp"

namespace trainsim::cuda {

// [from, to) element runs of [begin, end) of the flat buffer holding expert tensors (neighbouring
// expert tensors joined over the zero padding between them), ascending; and the rest of [begin, end).
std::vector<std::pair<int64_t, int64_t>> expert_runs(const std::vector<ParamView>& views, int64_t begin, int64_t end);
std::vector<std::pair<int64_t, int64_t>> dense_runs(const std::vector<ParamView>& views, int64_t begin, int64_t end);

// Sums [begin, end) of `grads` over `dp` on `stream`; with `expert_dp` (ep > 1) its expert runs over
// `expert_dp` instead (not at all where that is a group of one), each group's runs in one NCCL group.
void all_reduce_gradients(float* grads, const std::vector<ParamView>& views, int64_t begin, int64_t end, const NcclComm& dp,
                          const NcclComm* expert_dp, cudaStream_t stream);

// ep > 1: whether a tensor counts in the global norm summed over every rank. One that counts in its
// replica (counts_in_norm: TP slices, replicated tensors on TP rank 0, the tied embedding once)
// counts on rank 0 of the group reducing it (DP for dense tensors, expert DP for experts).
bool counts_in_expert_parallel_norm(const ParamView& v, bool counts_in_replica, int dp_rank, int expert_dp_rank);

}  // namespace trainsim::cuda
