// runtime/rank_grid.hpp: the communicators of a plan's rank grid, and the first error of any rank.
#include "runtime/rank_grid.hpp"

#include <chrono>
#include <climits>
#include "plan/rank_grid.hpp"

namespace trainsim::runtime {

double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::optional<RankError> first_error(MPI_Comm world, const std::optional<std::string>& error) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  int mine = error ? rank : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world);
  if (first == INT_MAX) return std::nullopt;
  RankError out;
  out.rank = first;
  out.message = error ? *error : std::string();
  int length = static_cast<int>(out.message.size());
  MPI_Bcast(&length, 1, MPI_INT, first, world);
  out.message.resize(static_cast<size_t>(length));
  MPI_Bcast(out.message.data(), length, MPI_CHAR, first, world);
  return out;
}

RankGrid RankGrid::build(const ParallelPlan& p, MPI_Comm world, bool tied_embeddings) {
  RankGrid g;
  g.world = world;
  MPI_Comm_rank(world, &g.world_rank);
  MPI_Comm_size(world, &g.world_size);
  // Megatron order: rank = tp + tp*(cp + cp*(dp + dp*pp)) (plan/rank_grid's global_rank).
  const int64_t r = g.world_rank;
  g.tp_rank = r % p.tp;
  g.cp_rank = (r / p.tp) % p.cp;
  g.dp_rank = (r / (p.tp * p.cp)) % p.dp;
  g.pp_rank = r / (p.tp * p.cp * p.dp);
  const auto split = [&](int64_t color, int64_t key, MPI_Comm* comm) {
    MPI_Comm_split(world, static_cast<int>(color), static_cast<int>(key), comm);
  };
  split(g.cp_rank + p.cp * (g.dp_rank + p.dp * g.pp_rank), g.tp_rank, &g.tp);
  split(g.tp_rank + p.tp * (g.dp_rank + p.dp * g.pp_rank), g.cp_rank, &g.cp);
  split(g.tp_rank + p.tp * (g.cp_rank + p.cp * g.pp_rank), g.dp_rank, &g.dp);
  split(g.tp_rank + p.tp * g.pp_rank, g.cp_rank + p.cp * g.dp_rank, &g.dp_cp);
  split(g.cp_rank + p.cp * g.dp_rank, g.tp_rank + p.tp * g.pp_rank, &g.model);
  // EP groups: ep consecutive ranks of the stage; expert DP: every ep-th rank of it (plan/rank_grid.cpp).
  const int64_t in_stage = r % (p.tp * p.cp * p.dp), groups = p.tp * p.cp * p.dp / p.ep;
  g.ep_rank = in_stage % p.ep;
  split(g.pp_rank * groups + in_stage / p.ep, g.ep_rank, &g.ep);
  if (p.ep > 1) {
    split(g.pp_rank * p.ep + g.ep_rank, in_stage / p.ep, &g.expert_dp);
  } else {
    MPI_Comm_dup(g.dp_cp, &g.expert_dp);
  }
  const bool ends = g.pp_rank == 0 || g.pp_rank == p.pp - 1;
  MPI_Comm_split(world, p.pp > 1 && ends && tied_embeddings ? static_cast<int>(g.tp_rank + p.tp * (g.cp_rank + p.cp * g.dp_rank)) : MPI_UNDEFINED,
                 static_cast<int>(g.pp_rank), &g.embedding);
  const auto stage_rank = [&](int64_t stage) { return static_cast<int>(global_rank(p, g.tp_rank, g.cp_rank, g.dp_rank, stage)); };
  if (g.pp_rank > 0) g.prev_stage = stage_rank(g.pp_rank - 1);
  if (g.pp_rank < p.pp - 1) g.next_stage = stage_rank(g.pp_rank + 1);
  g.stages = p.pp;
  g.chunks = p.schedule == Schedule::kInterleaved ? p.vpp : 1;
  if (p.pp > 1) {
    g.ring_prev = stage_rank((g.pp_rank + p.pp - 1) % p.pp);
    g.ring_next = stage_rank((g.pp_rank + 1) % p.pp);
  }
  return g;
}

void RankGrid::release() {
  for (MPI_Comm* c : {&tp, &cp, &dp, &dp_cp, &model, &embedding, &ep, &expert_dp}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
}

}  // namespace trainsim::runtime
