// Rank placement and group scopes (Megatron-LM order tp-cp-dp-pp; experts etp-ep-dp).
#include "plan/rank_grid.hpp"


namespace trainsim {

int64_t global_rank(const ParallelPlan& p, int64_t tp, int64_t cp, int64_t dp, int64_t pp) {
  return tp + p.tp * (cp + p.cp * (dp + p.dp * pp));
}

int64_t expert_dp(const ParallelPlan& p) {
  return p.experts_like_dense() ? p.dp * p.cp : p.tp * p.cp * p.dp / (p.ep * p.expert_tp_size());
}

GroupScope group_scope(const ParallelPlan& p, GroupKind kind, int64_t gpus_per_node) {
  GroupScope scope;
  auto rank_of = [&](int64_t i) {
    switch (kind) {
      case GroupKind::kTp: return global_rank(p, i, 0, 0, 0);
      case GroupKind::kCp: return global_rank(p, 0, i, 0, 0);
      case GroupKind::kDp: return global_rank(p, 0, 0, i, 0);
      case GroupKind::kPp: return global_rank(p, 0, 0, 0, i);
      case GroupKind::kDpCp: return global_rank(p, 0, i % p.cp, i / p.cp, 0);
      case GroupKind::kEp: return i * p.expert_tp_size();  // expert grid etp-ep-dp: every etp-th rank
      case GroupKind::kExpertTp: return i;                  // etp consecutive ranks
      case GroupKind::kExpertTpEp: return i;                // etp x ep consecutive ranks
      case GroupKind::kExpertDp:  // every (ep x etp)-th rank of the stage; experts like a dense FFN: the dp x cp group
        return p.experts_like_dense() ? global_rank(p, 0, i % p.cp, i / p.cp, 0) : i * p.ep * p.expert_tp_size();
      case GroupKind::kDpShard: return p.tp * i;                       // dp x cp order: rank = tp x index
      case GroupKind::kDpReplicate: return p.tp * p.shard_ranks() * i;
      case GroupKind::kStage: return i;  // tp-cp-dp order: a stage's ranks are consecutive
    }
    return int64_t{0};
  };
  const int64_t size = kind == GroupKind::kTp         ? p.tp
                       : kind == GroupKind::kCp       ? p.cp
                       : kind == GroupKind::kDp       ? p.dp
                       : kind == GroupKind::kDpCp     ? p.dp * p.cp
                       : kind == GroupKind::kEp       ? p.ep
                       : kind == GroupKind::kExpertTp ? p.expert_tp_size()
                       : kind == GroupKind::kExpertTpEp ? p.expert_tp_size() * p.ep
                       : kind == GroupKind::kExpertDp ? expert_dp(p)
                       : kind == GroupKind::kDpShard  ? p.shard_ranks()
                       : kind == GroupKind::kDpReplicate ? p.shard_replicas()
                       : kind == GroupKind::kStage       ? p.tp * p.cp * p.dp
                                                      : p.pp;
  if (kind == GroupKind::kStage) {  // ranks 0 .. size-1: the nodes follow without walking them
    scope.size = size;
    scope.nodes = (size + gpus_per_node - 1) / gpus_per_node;
    scope.ranks_per_node = (size + scope.nodes - 1) / scope.nodes;
    return scope;
  }
  // Every group's ranks grow with i, so the nodes it spans are the changes of node along it.
  int64_t node_count = 0, last_node = -1;
  for (int64_t i = 0; i < size; ++i) {
    const int64_t node = rank_of(i) / gpus_per_node;
    if (node != last_node) ++node_count;
    last_node = node;
  }
  scope.size = size;
  scope.nodes = node_count;
  scope.ranks_per_node = (size + scope.nodes - 1) / scope.nodes;
  return scope;
}

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp: return "tp";
    case GroupKind::kCp: return "cp";
    case GroupKind::kDp: return "dp";
    case GroupKind::kPp: return "pp";
    case GroupKind::kDpCp: return "dp_cp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kExpertTp: return "expert_tp";
    case GroupKind::kExpertTpEp: return "expert_tp_ep";
    case GroupKind::kExpertDp: return "expert_dp";
    case GroupKind::kDpShard: return "dp_shard";
    case GroupKind::kDpReplicate: return "dp_replicate";
    case GroupKind::kStage: return "stage";
  }
  return "?";
}

}  // namespace trainsim
