// Rank placement and group scopes (Megatron-LM order tp-cp-dp-pp; experts etp-ep-dp).
#include "plan/rank_grid.hpp"

#include <algorithm>


namespace trainsim {

int64_t global_rank(const ParallelPlan& p, int64_t tp, int64_t cp, int64_t dp, int64_t pp) {
  return tp + p.tp * (cp + p.cp * (dp + p.dp * pp));
}

int64_t expert_dp(const ParallelPlan& p) {
  return p.experts_like_dense() ? p.dp * p.cp : p.tp * p.cp * p.dp / (p.ep * p.expert_tp_size());
}

namespace {

struct Strided {
  int64_t size = 1, stride = 1;  // the group containing rank 0 is ranks 0, stride, 2 stride, ...
};

// Every group kind is strided in Megatron's order (tp-cp-dp-pp; experts etp-ep-dp): dp x cp ranks
// are tp apart whatever their cp / dp split, the experts' EP ranks etp apart.
Strided strided(const ParallelPlan& p, GroupKind kind) {
  const int64_t etp = p.expert_tp_size();
  switch (kind) {
    case GroupKind::kTp: return {p.tp, 1};
    case GroupKind::kCp: return {p.cp, p.tp};
    case GroupKind::kDp: return {p.dp, p.tp * p.cp};
    case GroupKind::kPp: return {p.pp, p.tp * p.cp * p.dp};
    case GroupKind::kDpCp: return {p.dp * p.cp, p.tp};
    case GroupKind::kEp: return {p.ep, etp};
    case GroupKind::kExpertTp: return {etp, 1};
    case GroupKind::kExpertTpEp: return {etp * p.ep, 1};
    case GroupKind::kExpertDp: return {expert_dp(p), p.experts_like_dense() ? p.tp : p.ep * etp};
    case GroupKind::kDpShard: return {p.shard_ranks(), p.tp};
    case GroupKind::kDpReplicate: return {p.shard_replicas(), p.tp * p.shard_ranks()};
    case GroupKind::kStage: return {p.tp * p.cp * p.dp, 1};
  }
  return {};
}

}  // namespace

GroupScope group_scope(const ParallelPlan& p, GroupKind kind, int64_t gpus_per_node) {
  const Strided g = strided(p, kind);
  GroupScope scope;
  scope.size = g.size;
  if (g.stride % gpus_per_node == 0) {
    scope.nodes = g.size;  // a node apart or more: one rank per node
  } else if (gpus_per_node % g.stride == 0) {
    const int64_t per_node = gpus_per_node / g.stride;
    scope.nodes = (g.size + per_node - 1) / per_node;
  } else {  // a stride that does not divide the node: count the changes of node along the group
    int64_t last_node = -1;
    scope.nodes = 0;
    for (int64_t i = 0; i < g.size; ++i) {
      const int64_t node = i * g.stride / gpus_per_node;
      if (node != last_node) ++scope.nodes;
      last_node = node;
    }
  }
  scope.nodes = std::max<int64_t>(1, scope.nodes);
  scope.ranks_per_node = (scope.size + scope.nodes - 1) / scope.nodes;
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
