// Where the ranks of a plan sit: Megatron-LM's order (tp fastest, then cp, then dp, then pp), so
// a tensor-parallel group is contiguous and stays inside a node when tp <= GPUs per node. For
// each communication group we derive its scope — size, members per node, nodes spanned — which is
// all the collective cost model needs (ranks of one group kind are symmetric).
#pragma once

#include <cstdint>

#include "plan/parallel_plan.hpp"

namespace trainsim {

// kDpCp: the data-parallel ranks of every context-parallel rank (Megatron's dp_cp group), over
// which gradients are reduced and optimizer states sharded: the weights are the same on every CP rank.
// Experts (Megatron-Core's expert grid etp-ep-dp over a stage's tp x cp x dp ranks): kExpertTp,
// the etp consecutive ranks splitting each expert; kEp, an MoE layer's expert-parallel group
// (every etp-th rank, ep of them); kExpertDp, the ranks holding the same expert slices, over which
// expert gradients are reduced and their optimizer states sharded (tp x cp x dp / (ep x etp);
// with the experts a TP-split dense FFN, the dp x cp group).
// kDpShard / kDpReplicate: with a ZeRO shard group smaller than dp x cp (HSDP), the ranks of one
// shard group (consecutive in dp x cp order) and the ranks holding the same shard across groups.
// kStage: every rank of one pipeline stage (tp x cp x dp), Megatron-Core's amax reduction group
// (parallel_state.get_amax_reduction_group with context parallelism) for FP8's scaling factors.
// kExpertTpEp: the etp x ep consecutive ranks of both (the all-gather dispatcher's tp_ep group).
enum class GroupKind { kTp, kCp, kDp, kPp, kDpCp, kEp, kExpertTp, kExpertTpEp, kExpertDp, kDpShard, kDpReplicate, kStage };

struct GroupScope {
  int64_t size = 1;              // ranks in the group
  int64_t ranks_per_node = 1;    // members of the group inside one node
  int64_t nodes = 1;             // nodes the group spans
  bool intra_node() const { return nodes == 1; }
};

// Scope of the group of `kind` containing rank 0 (every group of a kind has the same scope when
// gpus_per_node is a multiple or a divisor of the group's stride; otherwise this is rank 0's).
GroupScope group_scope(const ParallelPlan& plan, GroupKind kind, int64_t gpus_per_node);

// Ranks that hold the same experts and reduce their gradients: tp x cp x dp / (ep x expert_tp),
// or dp x cp when the experts are split over TP like a dense FFN (ParallelPlan::experts_like_dense).
int64_t expert_dp(const ParallelPlan& plan);

// Global rank of (tp, cp, dp, pp) coordinates in Megatron order.
int64_t global_rank(const ParallelPlan& plan, int64_t tp, int64_t cp, int64_t dp, int64_t pp);

const char* to_string(GroupKind kind);

}  // namespace trainsim
