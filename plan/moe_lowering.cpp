// An MoE layer's FFN, as Megatron-Core's MoELayer runs it with the
// all-to-all token dispatcher (megatron/core/transformer/moe/token_dispatcher.py): the router's
// logits, softmax and top-k; the token copies permuted so each expert's are contiguous; an
// all-to-all over the expert-parallel group (dispatch); the local experts' FFNs as one grouped
// GEMM per linear; the all-to-all back (combine); the copies unpermuted and summed with their
// router weights (without expert parallelism: no all-to-all, the experts split over TP). Shared
// experts (DeepSeek, Qwen2-MoE) run as a TP-split dense FFN on every token.
//
// Load balance: the busiest expert-parallel rank gets moe_load() times the mean share of token
// copies (the plan's moe_imbalance, capped by its capacity factor, which drops the copies beyond
// it); 1 by default: NVIDIA's benchmarks force-balance routing. Every rank waits for the busiest
// at the all-to-alls, so its grouped GEMMs and the copies it receives set the pace.
#include <algorithm>
#include <cmath>

#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

void add_moe_ffn(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  const MoeSpec& moe = *m.moe;
  // With expert parallelism a rank routes the tokens it holds (the sequence-parallel shard:
  // Megatron-Core runs MoE with TP only with SP) to whole experts (expert TP 1). Without it the
  // experts are split over TP like a dense FFN (Megatron-Core's default expert TP = TP): the TP
  // region's tokens all go through 1/t of every expert.
  const bool expert_parallel = p.ep > 1;
  const int64_t expert_tp = expert_parallel ? 1 : s.t;
  const double tokens = expert_parallel ? s.sp_tokens : static_cast<double>(s.tokens);
  const double load = p.expert_rank_load();
  const double copies = tokens * static_cast<double>(moe.top_k);
  const double copy_bytes = copies * static_cast<double>(s.h) * s.e;
  const double received_bytes = copy_bytes * load;  // the busiest rank's share of the all-to-all
  const double token_bytes = tokens * static_cast<double>(s.h) * s.e;
  if (!expert_parallel) add_tp_boundary(w, s, p.sequence_parallel, true);

  add_linear(w, "router", "router_dgrad", "router_wgrad", std::max<int64_t>(1, std::llround(tokens)), moe.experts, s.h);
  const double logits = tokens * static_cast<double>(moe.experts) * 4.0;  // fp32 softmax and top-k
  w.forward.push_back(memory("router_topk", 3 * logits));
  w.backward.push_back(memory("router_topk_bwd", 3 * logits));

  w.forward.push_back(memory("moe_permute", 2 * copy_bytes));
  if (expert_parallel) w.forward.push_back(collective("moe_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  // After the dispatch a balanced rank holds as many copies as it sent (the busiest `load` times
  // as many), spread over its experts / ep local experts: one grouped GEMM per linear over them.
  const int64_t local_experts = moe.experts / p.ep;
  const int64_t per_expert = std::max<int64_t>(1, std::llround(copies * load / static_cast<double>(local_experts)));
  add_ffn_core(w, m, s, kFfnNames, per_expert, moe.expert_ffn_hidden / expert_tp, local_experts);
  if (expert_parallel) w.forward.push_back(collective("moe_combine", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  w.forward.push_back(memory("moe_unpermute", 2 * copy_bytes + token_bytes));

  // The backward runs the same all-to-alls on the gradients, in reverse.
  w.backward.push_back(memory("moe_unpermute_bwd", 2 * copy_bytes + token_bytes));
  if (expert_parallel) {
    w.backward.push_back(collective("moe_combine_bwd", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
    w.backward.push_back(collective("moe_dispatch_bwd", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  }
  w.backward.push_back(memory("moe_permute_bwd", 2 * copy_bytes));

  if (moe.shared_experts > 0) {
    if (expert_parallel) add_tp_boundary(w, s, p.sequence_parallel, true);
    add_ffn_core(w, m, s, kSharedFfnNames, s.tokens, moe.shared_experts * moe.expert_ffn_hidden / s.t);
  }
  if (!expert_parallel || moe.shared_experts > 0) add_tp_boundary(w, s, p.sequence_parallel, false);
}

}  // namespace trainsim::lowering
