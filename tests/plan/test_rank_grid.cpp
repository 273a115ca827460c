// Group scopes: the strided closed forms of plan/rank_grid.cpp against walking every rank of the
// group containing rank 0, placed in Megatron's order by global_rank (experts: etp-ep-dp).
#include <catch2/catch.hpp>

#include <functional>

#include "plan/rank_grid.hpp"

using namespace trainsim;

namespace {

GroupScope walked(const ParallelPlan& p, int64_t size, const std::function<int64_t(int64_t)>& rank_of, int64_t gpus_per_node) {
  GroupScope s;
  s.size = size;
  s.nodes = 0;
  int64_t last = -1;
  for (int64_t i = 0; i < size; ++i) {
    const int64_t node = rank_of(i) / gpus_per_node;
    if (node != last) ++s.nodes;
    last = node;
  }
  s.ranks_per_node = (size + s.nodes - 1) / s.nodes;
  (void)p;
  return s;
}

}  // namespace

TEST_CASE("group scopes in closed form match walking the group's ranks, for every kind, layout and node size") {
  int64_t checked = 0;
  for (int64_t tp : {1, 2, 3, 4, 8}) {
    for (int64_t cp : {1, 2, 3}) {
      for (int64_t dp : {1, 2, 4, 6}) {
        for (int64_t ep : {1, 2, 4}) {
          for (int64_t etp : {0, 1, 2}) {
            ParallelPlan p;
            p.tp = tp;
            p.cp = cp;
            p.dp = dp;
            p.pp = 3;
            p.ep = ep;
            p.expert_tp = etp;
            const int64_t e = p.expert_tp_size();
            if ((tp * cp * dp) % (ep * e) != 0) continue;
            const std::vector<std::tuple<GroupKind, int64_t, std::function<int64_t(int64_t)>>> kinds = {
                {GroupKind::kTp, tp, [&](int64_t i) { return global_rank(p, i, 0, 0, 0); }},
                {GroupKind::kCp, cp, [&](int64_t i) { return global_rank(p, 0, i, 0, 0); }},
                {GroupKind::kDp, dp, [&](int64_t i) { return global_rank(p, 0, 0, i, 0); }},
                {GroupKind::kPp, 3, [&](int64_t i) { return global_rank(p, 0, 0, 0, i); }},
                {GroupKind::kDpCp, dp * cp, [&](int64_t i) { return global_rank(p, 0, i % cp, i / cp, 0); }},
                {GroupKind::kEp, ep, [&](int64_t i) { return i * e; }},
                {GroupKind::kExpertTp, e, [&](int64_t i) { return i; }},
                {GroupKind::kExpertTpEp, e * ep, [&](int64_t i) { return i; }},
                {GroupKind::kExpertDp, expert_dp(p),
                 [&](int64_t i) { return p.experts_like_dense() ? global_rank(p, 0, i % cp, i / cp, 0) : i * ep * e; }},
                {GroupKind::kStage, tp * cp * dp, [&](int64_t i) { return i; }}};
            for (int64_t gpn : {1, 2, 4, 6, 8, 16}) {
              for (const auto& [kind, size, rank_of] : kinds) {
                INFO(to_string(kind) << " tp " << tp << " cp " << cp << " dp " << dp << " ep " << ep << " etp " << e << ", " << gpn << " per node");
                const GroupScope expected = walked(p, size, rank_of, gpn), got = group_scope(p, kind, gpn);
                CHECK(got.size == expected.size);
                CHECK(got.nodes == expected.nodes);
                CHECK(got.ranks_per_node == expected.ranks_per_node);
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  CHECK(checked > 1000);
}
