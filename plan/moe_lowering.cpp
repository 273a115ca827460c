// An MoE layer's FFN, as Megatron-Core's MoELayer runs it with the
// all-to-all token dispatcher (megatron/core/transformer/moe/token_dispatcher.py; or its all-gather
// dispatcher, plan key moe_dispatcher): the router's
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
#include <string_view>

#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

namespace {

// One MoE layer's token traffic on this rank.
struct Traffic {
  double copy_bytes = 0;      // the top-k copies of the tokens it routes
  double received_bytes = 0;  // the copies its experts get (the busiest rank's: copy_bytes x load)
  double token_bytes = 0;     // the tokens it routes
  int64_t etp = 1;            // expert TP (1 when the experts are split like a dense FFN)
  int64_t top_k = 1, experts = 1;
};

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

// The flex dispatcher (DeepEP / HybridEP) moves the same copies as the all-to-all, deduplicated per
// node (sim/cost_model.hpp node_dedup_exchange_s): its EP all-to-alls carry the routing's shape.
void mark_flex(std::vector<Op>& ops, const ParallelPlan& p, const Traffic& t) {
  if (p.moe_dispatcher != MoeDispatcher::kFlex) return;
  for (Op& op : ops) {
    if (op.group != GroupKind::kEp || op.collective != CollectiveKind::kAllToAll) continue;
    op.dedup_top_k = static_cast<int32_t>(t.top_k);
    op.dedup_experts = static_cast<int32_t>(t.experts);
  }
}

// The all-to-all dispatcher: the copies to their experts' EP ranks (then over expert TP) and back;
// forward before the experts (`dispatch`) or after them, and the backward's pair.
void add_alltoall_exchange(LayerWork& w, const ParallelPlan& p, const Traffic& t, bool dispatch) {
  const bool ep = p.ep > 1;
  if (dispatch) {
    if (ep) w.forward.push_back(collective("moe_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, t.received_bytes));
    add_expert_tp_exchange(w.forward, t.etp, t.received_bytes, true, false);
    add_expert_tp_exchange(w.backward, t.etp, t.received_bytes, false, true);
    if (ep) w.backward.push_back(collective("moe_dispatch_bwd", CollectiveKind::kAllToAll, GroupKind::kEp, t.received_bytes));
    return;
  }
  add_expert_tp_exchange(w.forward, t.etp, t.received_bytes, false, false);
  if (ep) w.forward.push_back(collective("moe_combine", CollectiveKind::kAllToAll, GroupKind::kEp, t.received_bytes));
  if (ep) w.backward.push_back(collective("moe_combine_bwd", CollectiveKind::kAllToAll, GroupKind::kEp, t.received_bytes));
  add_expert_tp_exchange(w.backward, t.etp, t.received_bytes, true, true);
}

// The all-gather dispatcher (Megatron-Core's MoEAllGatherTokenDispatcher): every token of the
// expert TP x EP group, its routing map (1 byte per expert) and fp32 probabilities all-gathered
// on every rank before the experts; after them the outputs, unpermuted to the gathered tokens and
// cast to the probabilities' fp32, reduce-scattered back. The backward: the output gradients
// gathered (fp32), the input gradients reduce-scattered.
void add_allgather_exchange(LayerWork& w, const ParallelPlan& p, const Traffic& t, int64_t experts, double tokens, double e, bool dispatch) {
  const double group = static_cast<double>(p.ep * t.etp);
  const double gathered = t.token_bytes * group, gathered_fp32 = gathered * 4.0 / e;
  if (dispatch) {
    w.forward.push_back(collective("moe_dispatch", CollectiveKind::kAllGather, GroupKind::kExpertTpEp, gathered));
    w.forward.push_back(collective("moe_dispatch_probs", CollectiveKind::kAllGather, GroupKind::kExpertTpEp,
                                   tokens * static_cast<double>(experts) * 5.0 * group));
    w.backward.push_back(collective("moe_dispatch_bwd", CollectiveKind::kReduceScatter, GroupKind::kExpertTpEp, gathered));
    return;
  }
  w.forward.push_back(collective("moe_combine", CollectiveKind::kReduceScatter, GroupKind::kExpertTpEp, gathered_fp32));
  w.backward.push_back(collective("moe_combine_bwd", CollectiveKind::kAllGather, GroupKind::kExpertTpEp, gathered_fp32));
}

// The experts' fc2 bias (GPT-OSS: biased experts), as Megatron-Core's TEGroupedMLP adds it
// (megatron/core/transformer/moe/experts.py `_apply_bias`, through core_v0.16 and the Megatron-LM
// pinned by Megatron-Bridge v0.2.0-v0.5.0; fc1's bias is in its GEMMs' epilogue): a Python loop
// over the local experts, `t + b * p` on each expert's rows (b: the bf16 bias, p: the fp32 router
// weights, so the sum is fp32), the pieces concatenated and cast back to the activations' type.
// Forward: b * p written, added to t, the sum copied by torch.cat, cast down; 2 aten calls per
// expert and 4 per layer (two splits, cat, to). Backward: the cast's gradient up to fp32, t's
// gradient cast down, b's and p's gradients each a product and a sum over it, t's pieces
// concatenated; 2 autograd nodes per expert (AddBackward0, MulBackward0) and 4 per layer.
// `elements`: the rows this rank's experts ran times hidden.
void add_expert_bias_loop(LayerWork& w, double elements, double e, int64_t local_experts) {
  const double f = std::max(4.0, e);        // the fp32 sum
  const double cast = e != f ? e + f : 0.0;  // a cast between the activations' type and fp32
  Op forward = memory("expert_bias_add", elements * (f + (e + 2 * f) + 2 * f + cast));
  Op backward = memory("expert_bias_add_bwd", elements * (cast + cast + 6 * f + 2 * e));
  forward.eager_ops = backward.eager_ops = static_cast<int32_t>(2 * local_experts + 4);
  backward.backward = true;
  w.forward.push_back(forward);
  w.backward.push_back(backward);
}

// GPT-OSS's clamped GLU in Megatron-Core's experts (TEGroupedMLP with bias_activation_fusion:
// megatron/core/fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl, the same from the
// GPT-OSS commit 2e29a5e1 of 2025-09-09 to 2026-08): before the compiled activation, an eager
// torch.clamp writes each half of fc1's output to a new tensor and torch.cat joins the two, each
// read and written once: 8 bytes per byte of the activation's output (`inner`, one half). The
// backward through autograd: ClampBackward on each half (the gate's `self <= limit` read and a
// bool mask written, torch.where reading mask and gradient and writing it: 4; the linear half,
// bounded both ways, two comparisons and logical_and_ first: 7), and chunk's backward joining the
// two halves' gradients with torch.cat (4): 15. Issued as 5 more aten calls (chunk, two clamps,
// cat, the linear offset's torch.tensor on the device) and 4 autograd nodes; that tensor is a
// synchronous copy from the host (PyTorch's blocking copy_ synchronizes the stream), so the host
// waits for the device there (Op::host_sync). The activation's own ops carry it, so recomputing
// moe_act re-runs it too. Not with Transformer Engine's op fuser
// (its ScaledClampedQGeGLU clamps inside the fused kernel) or another stack's experts.
void add_glu_clamp(LayerWork& w, size_t forward_act, size_t backward_from, double inner) {
  Op& forward = w.forward[forward_act];
  forward.name = "swiglu_clamped";
  forward.bytes += 8.0 * inner;
  forward.eager_ops += 5;
  forward.host_sync = true;  // torch.tensor(linear_offset, device=...): a synchronous copy to the device
  for (size_t i = backward_from; i < w.backward.size(); ++i) {
    if (std::string_view(w.backward[i].name) != "swiglu_bwd") continue;
    w.backward[i].name = "swiglu_clamped_bwd";
    w.backward[i].bytes += 15.0 * inner;
    w.backward[i].eager_ops += 4;
    w.backward[i].backward = true;
    return;
  }
}

}  // namespace

void add_moe_ffn(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s, LayerMarks& marks) {
  const MoeSpec& moe = *m.moe;
  // Experts like a dense FFN (no EP, expert TP = TP): the TP region's tokens all go through 1/t of
  // every expert. Otherwise a rank routes the tokens it holds (the sequence-parallel shard:
  // Megatron-Core runs MoE with TP only with SP) to the EP ranks holding their experts, each
  // expert split over expert_tp ranks.
  const bool like_dense = p.experts_like_dense();
  const bool allgather = !like_dense && p.moe_dispatcher == MoeDispatcher::kAllGather;
  const double tokens = like_dense ? static_cast<double>(s.tokens) : s.sp_tokens;
  Traffic t;
  t.etp = like_dense ? 1 : p.expert_tp_size();  // like_dense: the split is the TP region's
  t.copy_bytes = tokens * static_cast<double>(moe.top_k) * static_cast<double>(s.h) * s.e;
  t.received_bytes = t.copy_bytes * p.expert_rank_load();
  t.token_bytes = tokens * static_cast<double>(s.h) * s.e;
  t.top_k = moe.top_k;
  t.experts = moe.experts;
  if (like_dense) add_tp_boundary(w, s, p.sequence_parallel, true);

  const size_t router_forward = w.forward.size(), router_backward = w.backward.size();
  add_linear(w, "router", "router_dgrad", "router_wgrad", std::max<int64_t>(1, std::llround(tokens)), moe.experts, s.h);
  const double logits = tokens * static_cast<double>(moe.experts) * 4.0;  // fp32 softmax and top-k
  w.forward.push_back(memory("router_topk", 3 * logits));
  w.backward.push_back(memory("router_topk_bwd", 3 * logits));
  tag_graph_scope(w.forward, router_forward, kGraphMoeRouter);
  tag_graph_scope(w.backward, router_backward, kGraphMoeRouter);

  // The all-gather dispatcher permutes out of (and unpermutes into) the gathered tokens.
  const double outside = allgather ? t.token_bytes * static_cast<double>(p.ep * t.etp) : t.token_bytes;
  w.forward.push_back(memory("moe_permute", 2 * t.copy_bytes));
  const size_t after_permute = w.forward.size();
  if (allgather) add_allgather_exchange(w, p, t, moe.experts, tokens, s.e, true);
  else add_alltoall_exchange(w, p, t, true);
  // After the dispatch a balanced rank holds as many copies as it sent (the busiest `load` times
  // as many; etp times that after the expert-TP gather), spread over its experts / ep local
  // experts: one grouped GEMM per linear over them.
  const int64_t local_experts = moe.experts / p.ep;
  const double rank_copies = t.received_bytes / (static_cast<double>(s.h) * s.e) * static_cast<double>(t.etp);
  const int64_t per_expert = std::max<int64_t>(1, std::llround(rank_copies / static_cast<double>(local_experts)));
  marks.routed_act = w.forward.size() + 1;  // after fc1
  const size_t experts_forward = w.forward.size(), experts_backward = w.backward.size();
  const int64_t expert_width = moe.expert_ffn_hidden / (like_dense ? s.t : t.etp);
  add_ffn_core(w, m, s, kFfnNames, per_expert, expert_width, local_experts, p.bias_gelu_fusion);
  // The dispatcher needs the token counts on the host before it exchanges the copies (the
  // all-to-all's split sizes, Megatron-Core token_dispatcher.py: cuda_sync_point
  // "before_ep_alltoall", or "before_finish" without EP and TP; the all-gather dispatcher's
  // tokens_per_expert.cpu(); DeepEP's and HybridEP's dispatch wait on the host for the received
  // counts): a host synchronisation at the exchange, or at the experts' first GEMM without one.
  // Inside a CUDA graph of the whole iteration there is none (sim/step_cost.cpp).
  w.forward[after_permute].host_sync = true;
  if (eager_glu_clamp(m, p)) {
    add_glu_clamp(w, marks.routed_act, experts_backward,
                  static_cast<double>(per_expert) * static_cast<double>(local_experts) * static_cast<double>(expert_width) * s.e);
  }
  // Transformer Engine's GroupedLinear issues one cuBLAS GEMM per local expert (multi-stream
  // cuBLAS, transformer_engine/common/gemm/cublaslt_gemm.cu nvte_multi_stream_cublas_gemm).
  if (p.host_stack == HostStack::kTransformerEngine && local_experts > 1) {
    for (auto [ops, from] : {std::pair{&w.forward, experts_forward}, std::pair{&w.backward, experts_backward}}) {
      for (size_t i = from; i < ops->size(); ++i) {
        if ((*ops)[i].kind == OpKind::kGemm) (*ops)[i].expert_launches = static_cast<int32_t>(local_experts);
      }
    }
  }
  if (m.linear_bias && !p.te_op_fuser) add_expert_bias_loop(w, rank_copies * static_cast<double>(s.h), s.e, local_experts);
  if (allgather) add_allgather_exchange(w, p, t, moe.experts, tokens, s.e, false);
  else add_alltoall_exchange(w, p, t, false);
  w.forward.push_back(memory("moe_unpermute", 2 * t.copy_bytes + outside));
  w.backward.push_back(memory("moe_unpermute_bwd", 2 * t.copy_bytes + outside));
  w.backward.push_back(memory("moe_permute_bwd", 2 * t.copy_bytes));
  mark_flex(w.forward, p, t);
  mark_flex(w.backward, p, t);

  if (moe.shared_experts > 0) {
    marks.shared_begin = w.forward.size();
    if (!like_dense) add_tp_boundary(w, s, p.sequence_parallel, true);
    add_ffn_core(w, m, s, kSharedFfnNames, s.tokens, moe.shared_experts * moe.expert_ffn_hidden / s.t, 1, p.bias_gelu_fusion);
    marks.shared_end = w.forward.size();
  }
  if (like_dense || moe.shared_experts > 0) add_tp_boundary(w, s, p.sequence_parallel, false);
}

}  // namespace trainsim::lowering
