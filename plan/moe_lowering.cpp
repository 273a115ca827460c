// An MoE layer's FFN, as Megatron-Core's MoELayer runs it with the
// all-to-all token dispatcher (megatron/core/transformer/moe/token_dispatcher.py): the router's
// logits, softmax and top-k; the token copies permuted so each expert's are contiguous; an
// all-to-all over the expert-parallel group (dispatch); the local experts' FFNs as one grouped
// GEMM per linear; the all-to-all back (combine); the copies unpermuted and summed with their
// router weights (without expert parallelism: no all-to-all); with expert TP the copies gathered
// over the ranks splitting each expert and their outputs reduce-scattered (or, without EP and with
// expert TP = TP, the experts split over TP like a dense FFN). Shared experts (DeepSeek,
// Qwen2-MoE) run as a TP-split dense FFN on every token.
//
// Load balance: the busiest expert-parallel rank gets moe_load() times the mean share of token
// copies (the plan's moe_imbalance, capped by its capacity factor, which drops the copies beyond
// it); 1 by default: NVIDIA's benchmarks force-balance routing. Every rank waits for the busiest
// at the all-to-alls, so its grouped GEMMs and the copies it receives set the pace.
#include <algorithm>
#include <cmath>

#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

namespace {

// Expert TP > 1 apart from the dense TP (Megatron-Core's all-to-all dispatcher with an expert-TP
// group): after the dispatch the copies are all-gathered over the etp ranks splitting the same
// experts, each runs its 1/etp slice of them on all, and the partial outputs are reduce-scattered
// back before the combine; the backward runs the pair in reverse.
void add_expert_tp_exchange(std::vector<Op>& ops, int64_t etp, double copy_bytes, bool gather, bool backward) {
  if (etp <= 1) return;
  const double bytes = copy_bytes * static_cast<double>(etp);  // the gathered copies (the all-gather's output)
  if (gather) ops.push_back(collective(backward ? "moe_combine_gather_bwd" : "moe_dispatch_gather", CollectiveKind::kAllGather, GroupKind::kExpertTp, bytes));
  else ops.push_back(collective(backward ? "moe_dispatch_scatter_bwd" : "moe_combine_scatter", CollectiveKind::kReduceScatter, GroupKind::kExpertTp, bytes));
}

}  // namespace

void add_moe_ffn(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  const MoeSpec& moe = *m.moe;
  // Experts like a dense FFN (no EP, expert TP = TP): the TP region's tokens all go through 1/t of
  // every expert. Otherwise a rank routes the tokens it holds (the sequence-parallel shard:
  // Megatron-Core runs MoE with TP only with SP) to the EP ranks holding their experts, each
  // expert split over expert_tp ranks.
  const bool like_dense = p.experts_like_dense();
  const bool expert_parallel = p.ep > 1;
  const int64_t etp = like_dense ? 1 : p.expert_tp_size();  // like_dense: the split is the TP region's
  const int64_t expert_width = moe.expert_ffn_hidden / (like_dense ? s.t : etp);
  const double tokens = like_dense ? static_cast<double>(s.tokens) : s.sp_tokens;
  const double load = p.expert_rank_load();
  const double copies = tokens * static_cast<double>(moe.top_k);
  const double copy_bytes = copies * static_cast<double>(s.h) * s.e;
  const double received_bytes = copy_bytes * load;  // the busiest rank's share of the all-to-all
  const double token_bytes = tokens * static_cast<double>(s.h) * s.e;
  if (like_dense) add_tp_boundary(w, s, p.sequence_parallel, true);

  add_linear(w, "router", "router_dgrad", "router_wgrad", std::max<int64_t>(1, std::llround(tokens)), moe.experts, s.h);
  const double logits = tokens * static_cast<double>(moe.experts) * 4.0;  // fp32 softmax and top-k
  w.forward.push_back(memory("router_topk", 3 * logits));
  w.backward.push_back(memory("router_topk_bwd", 3 * logits));

  w.forward.push_back(memory("moe_permute", 2 * copy_bytes));
  if (expert_parallel) w.forward.push_back(collective("moe_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  add_expert_tp_exchange(w.forward, etp, received_bytes, true, false);
  // After the dispatch a balanced rank holds as many copies as it sent (the busiest `load` times
  // as many; etp times that after the expert-TP gather), spread over its experts / ep local
  // experts: one grouped GEMM per linear over them.
  const int64_t local_experts = moe.experts / p.ep;
  const int64_t per_expert = std::max<int64_t>(1, std::llround(copies * load * static_cast<double>(etp) / static_cast<double>(local_experts)));
  add_ffn_core(w, m, s, kFfnNames, per_expert, expert_width, local_experts);
  add_expert_tp_exchange(w.forward, etp, received_bytes, false, false);
  if (expert_parallel) w.forward.push_back(collective("moe_combine", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  w.forward.push_back(memory("moe_unpermute", 2 * copy_bytes + token_bytes));

  // The backward runs the same exchanges on the gradients, in reverse.
  w.backward.push_back(memory("moe_unpermute_bwd", 2 * copy_bytes + token_bytes));
  if (expert_parallel) w.backward.push_back(collective("moe_combine_bwd", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  add_expert_tp_exchange(w.backward, etp, received_bytes, true, true);
  add_expert_tp_exchange(w.backward, etp, received_bytes, false, true);
  if (expert_parallel) w.backward.push_back(collective("moe_dispatch_bwd", CollectiveKind::kAllToAll, GroupKind::kEp, received_bytes));
  w.backward.push_back(memory("moe_permute_bwd", 2 * copy_bytes));

  if (moe.shared_experts > 0) {
    if (!like_dense) add_tp_boundary(w, s, p.sequence_parallel, true);
    add_ffn_core(w, m, s, kSharedFfnNames, s.tokens, moe.shared_experts * moe.expert_ffn_hidden / s.t);
  }
  if (like_dense || moe.shared_experts > 0) add_tp_boundary(w, s, p.sequence_parallel, false);
}

}  // namespace trainsim::lowering
