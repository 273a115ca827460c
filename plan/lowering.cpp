// Lowering of a Megatron-style transformer layer; the op order and shapes follow Megatron-LM's
// ParallelTransformerLayer with column/row-parallel linears (Shoeybi et al. 2019) and sequence
// parallelism (Korthikanti et al. 2022 §4.2.2).
#include "plan/lowering.hpp"

#include <algorithm>
#include <cmath>

#include "plan/lowering_ops.hpp"
#include "plan/rank_memory.hpp"
#include "plan/recompute_span.hpp"

namespace trainsim {

double Op::attention_window_share() const {
  const double s = static_cast<double>(attention_seq), w = static_cast<double>(attention_window);
  if (attention_window <= 0 || w >= s || s <= 0) return 1.0;
  // A band of width w under the diagonal: s w - w^2 / 2 pairs of the causal s^2 / 2.
  return (s * w - 0.5 * w * w) / (0.5 * s * s);
}

double Op::flops() const {
  if (kind == OpKind::kGemm) return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  if (kind == OpKind::kAttention) {
    // QK^T and AV: 2 s^2 (d_qk + d_v) per head (4 s^2 d with equal widths); a causal kernel computes
    // half (a window its band); backward = 2.5x (five GEMMs).
    const double s = static_cast<double>(attention_seq);
    const double widths = static_cast<double>(attention_head_dim + (attention_v_head_dim > 0 ? attention_v_head_dim : attention_head_dim));
    const double forward = 2.0 * static_cast<double>(attention_batch_heads) * s * s * widths * 0.5 /
                           static_cast<double>(attention_cp) * attention_window_share();
    return backward ? 2.5 * forward : forward;
  }
  return 0.0;
}

namespace lowering {

// Entering and leaving the tensor-parallel region: all-reduce (no SP) or all-gather +
// reduce-scatter (SP); the conjugate collective runs in the backward.
void add_tp_boundary(LayerWork& w, const Shapes& s, bool sp, bool entering) {
  if (s.t == 1) return;
  const double bytes = static_cast<double>(s.tokens) * static_cast<double>(s.h) * s.e;
  if (!sp) {
    (entering ? w.backward : w.forward).push_back(collective("tp_allreduce", CollectiveKind::kAllReduce, GroupKind::kTp, bytes));
    return;
  }
  if (entering) {
    w.forward.push_back(collective("sp_allgather", CollectiveKind::kAllGather, GroupKind::kTp, bytes));
    w.backward.push_back(collective("sp_reducescatter", CollectiveKind::kReduceScatter, GroupKind::kTp, bytes));
    // Megatron gathers the input again in the backward for the weight gradient.
    w.backward.push_back(collective("sp_allgather_wgrad", CollectiveKind::kAllGather, GroupKind::kTp, bytes));
  } else {
    w.forward.push_back(collective("sp_reducescatter", CollectiveKind::kReduceScatter, GroupKind::kTp, bytes));
    w.backward.push_back(collective("sp_allgather", CollectiveKind::kAllGather, GroupKind::kTp, bytes));
  }
}

void add_ffn_core(LayerWork& w, const ModelSpec& m, const Shapes& s, const FfnNames& n, int64_t tokens, int64_t width,
                  int64_t groups, bool bias_gelu_fusion) {
  const bool swiglu = m.ffn_kind == FfnKind::kSwiglu;
  add_linear(w, n.up, n.up_dgrad, n.up_wgrad, tokens, (swiglu ? 2 : 1) * width, s.h, groups);
  const double inner = static_cast<double>(tokens) * static_cast<double>(groups) * static_cast<double>(width) * s.e;
  // A biased GELU without Megatron's bias_gelu fusion adds fc1's bias in a kernel of its own
  // first (GPT-NeoX's default: activation_func(intermediate + bias)); its gradient is the GELU's.
  if (!swiglu && m.linear_bias && !bias_gelu_fusion) w.forward.push_back(memory("gelu_bias_add", 2.0 * inner));
  w.forward.push_back(memory(swiglu ? "swiglu" : "gelu", (swiglu ? 3.0 : 2.0) * inner));
  w.backward.push_back(memory(swiglu ? "swiglu_bwd" : "gelu_bwd", (swiglu ? 5.0 : 3.0) * inner));
  add_linear(w, n.down, n.down_dgrad, n.down_wgrad, tokens, s.h, width, groups);
}

// Marks the ops from `from` on that no block has claimed as `scope`'s (Op::graph_scope).
void tag_graph_scope(std::vector<Op>& ops, size_t from, uint32_t scope) {
  for (size_t i = from; i < ops.size(); ++i) {
    if (ops[i].graph_scope == 0) ops[i].graph_scope = scope;
  }
}

// Bytes an RMSNorm moves relative to one fused kernel: PyTorch's eager composite (fp32 up-cast,
// square, mean, rsqrt, two multiplies, down-cast) against Liger's fused kernel on A100-SXM4-80GB,
// bf16, M = 2048, H = 4096: 1080 / 120 GB/s forward, 508 / 68 GB/s backward of the same minimal
// bytes (shared/reference/microbench.md §3b, Liger benchmark CSV). LayerNorm's eager kernel is
// one fused native kernel (the same table: within 1.1-1.5x of Liger), so it stays at 1.
NormTraffic norm_traffic(const ModelSpec& m, const ParallelPlan& p) {
  if (p.norm != NormKernel::kEager || m.norm != NormKind::kRmsNorm) return {};
  return {1080.0 / 120.0, 508.0 / 68.0};
}

}  // namespace lowering

namespace {

using namespace lowering;

// Context parallelism's ring (Megatron-Core through Transformer Engine, cp_comm_type "p2p"): each
// of cp - 1 steps passes this rank's K and V block to the next CP rank while attention runs on the
// block received before; the backward passes K and V again and their gradients. One send/recv of
// the steps' bytes, overlapped with the attention op just before it: only what is longer shows.
void add_cp_ring(std::vector<Op>& ops, const Shapes& s, int64_t cp, bool backward) {
  if (cp <= 1) return;
  const double kv_block = static_cast<double>(s.tokens) * static_cast<double>((s.k_core + s.kv) / s.t) * s.e;  // K and V
  Op ring = collective(backward ? "cp_ring_kv_bwd" : "cp_ring_kv", CollectiveKind::kSendRecv, GroupKind::kCp,
                       static_cast<double>(cp - 1) * kv_block * (backward ? 2.0 : 1.0));
  ring.overlaps_op = static_cast<int32_t>(ops.size()) - 1;  // the attention op
  ops.push_back(ring);
}

// Context parallelism's exchange of K and V around the attention op (`after`: the ops that follow
// it). p2p: the ring above, after (overlapping) the attention op. all_gather: K and V of every CP
// rank gathered before attention (cp blocks, exposed); the backward gathers them again and
// reduce-scatters their gradients (Megatron-Core's AttnFuncWithCPAndKVAllGather). a2a: Q, K and V
// all-to-all'd from a sequence split to a head split before attention and the output back after;
// the backward the same on the gradients.
void add_cp_exchange(std::vector<Op>& ops, const Shapes& s, const ParallelPlan& p, bool backward, bool after = false) {
  if (p.cp <= 1) return;
  const double tokens = static_cast<double>(s.tokens), e = s.e;
  const double kv_block = tokens * static_cast<double>((s.k_core + s.kv) / s.t) * e;  // K and V (MLA: 192- and 128-wide heads)
  const double cp = static_cast<double>(p.cp);
  switch (p.cp_comm) {
    case CpComm::kP2p:
      if (after) add_cp_ring(ops, s, p.cp, backward);
      return;
    case CpComm::kAllGather:
      if (after && backward) ops.push_back(collective("cp_reducescatter_dkv", CollectiveKind::kReduceScatter, GroupKind::kCp, cp * kv_block));
      if (!after) ops.push_back(collective(backward ? "cp_allgather_kv_bwd" : "cp_allgather_kv", CollectiveKind::kAllGather, GroupKind::kCp, cp * kv_block));
      return;
    case CpComm::kA2a: {
      const double qkv = tokens * static_cast<double>((s.q_core + s.k_core + s.kv) / s.t) * e, out = tokens * static_cast<double>(s.q / s.t) * e;
      if (!after) ops.push_back(collective(backward ? "cp_a2a_out_bwd" : "cp_a2a_qkv", CollectiveKind::kAllToAll, GroupKind::kCp, backward ? out : qkv));
      if (after) ops.push_back(collective(backward ? "cp_a2a_qkv_bwd" : "cp_a2a_out", CollectiveKind::kAllToAll, GroupKind::kCp, backward ? qkv : out));
      return;
    }
  }
}

// What torchtitan's per-op checkpointing runs again in the backward: every forward op but those
// whose outputs it keeps (the 1st, 3rd, 5th and 7th matmul: wq, wv, w1/fc1 and a gated FFN's w2;
// attention; reduce-scatters). Of the fused QKV GEMM that is wk's third, of a gated FFN's fused
// w1|w3 GEMM w3's half; the all-gathers of SP run again with the norms they feed.
std::vector<Op> selective_op_recompute(const ModelSpec& m, const std::vector<Op>& forward, const Shapes& s) {
  const bool gated = m.ffn_kind != FfnKind::kGelu;
  std::vector<Op> out;
  for (const Op& op : forward) {
    const std::string name = op.name;
    if (name == "attention" || name == "attention_window" || name == "cp_ring_kv" || name == "sp_reducescatter" || name == "tp_allreduce") continue;
    if (name == "qkv") {
      out.push_back(gemm("qkv_recompute_k", op.m, s.kv / s.t, op.k));
    } else if (name == "fc1") {
      if (gated) out.push_back(gemm("fc1_recompute_w3", op.m, op.n / 2, op.k));
    } else if (name == "fc2") {
      if (!gated) out.push_back(op);
    } else if (name == "attn_scores" || name == "attn_context" || name == "softmax") {
      out.push_back(op);  // an unfused attention core is not an op it keeps
    } else {
      out.push_back(op);  // norms, rotary, wo, activations, residual adds, SP all-gathers
    }
  }
  // An overlap pairs ops by index: re-point it at the copy of its GEMM (by name), or drop it.
  for (Op& op : out) {
    if (op.overlaps_op < 0) continue;
    const char* hiding = forward[static_cast<size_t>(op.overlaps_op)].name;
    op.overlaps_op = index_of(out, hiding, 0);
  }
  return out;
}

// The attention core: a fused (flash) kernel with context parallelism's K,V ring beside it, or
// Megatron's unfused batched GEMMs around the softmax.
void add_attention(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  Op attention;
  attention.name = "attention";
  const int64_t batch = p.micro_batch;
  if (p.attention == AttentionKernel::kFlash) {
    attention.kind = OpKind::kAttention;
    attention.attention_batch_heads = batch * s.heads_per_rank;
    attention.attention_seq = m.seq_len;
    attention.attention_head_dim = m.qk_head_dim();
    if (m.mla) attention.attention_v_head_dim = m.head_dim;
    attention.attention_cp = p.cp;
    if (p.cp > 1 && p.cp_comm == CpComm::kA2a) {
      // Ulysses: the all-to-all gives each rank the whole sequence for heads / cp of its heads.
      attention.attention_batch_heads /= p.cp;
      attention.attention_cp = 1;
    }
    // Every layer's work is the same op list: with a sliding window in some layers, the layer's
    // heads are split in that proportion between a windowed kernel and a full one (exact when the
    // windowed layers are every other one, as in Gemma 2 and GPT-OSS).
    Op windowed = attention;
    windowed.name = "attention_window";
    windowed.attention_window = m.sliding_window;
    windowed.attention_batch_heads = std::llround(static_cast<double>(attention.attention_batch_heads) *
                                                  static_cast<double>(m.windowed_layers()) / static_cast<double>(m.layers));
    attention.attention_batch_heads -= windowed.attention_batch_heads;
    add_cp_exchange(w.forward, s, p, false);
    if (attention.attention_batch_heads > 0) w.forward.push_back(attention);
    if (windowed.attention_batch_heads > 0) w.forward.push_back(windowed);
    add_cp_exchange(w.forward, s, p, false, true);
    attention.backward = windowed.backward = true;
    attention.name = "attention_bwd";
    windowed.name = "attention_window_bwd";
    add_cp_exchange(w.backward, s, p, true);
    if (attention.attention_batch_heads > 0) w.backward.push_back(attention);
    if (windowed.attention_batch_heads > 0) w.backward.push_back(windowed);
    add_cp_exchange(w.backward, s, p, true, true);
  } else {
    // Unfused: batched QK^T and AV GEMMs plus softmax (+ dropout) over a*s^2 scores per sequence.
    Op scores = gemm("attn_scores", m.seq_len, m.seq_len, m.qk_head_dim());
    scores.batch = batch * s.heads_per_rank;
    Op context = gemm("attn_context", m.seq_len, m.head_dim, m.seq_len);
    context.batch = scores.batch;
    const double probs = static_cast<double>(scores.batch) * static_cast<double>(m.seq_len) * static_cast<double>(m.seq_len) * s.e;
    w.forward.push_back(scores);
    // Without the fused scale-mask-softmax, PyTorch masks the scores in place first (masked_fill_:
    // read and write them) and its backward masks the gradient again (GPT-NeoX's
    // forward_torch_softmax; Megatron --no-masked-softmax-fusion).
    if (!p.softmax_fusion) w.forward.push_back(memory("softmax_mask_fill", 2.0 * probs));
    w.forward.push_back(memory("softmax", (m.dropout ? 4.0 : 2.0) * probs));
    w.forward.push_back(context);
    for (const Op& g : {scores, context}) {
      Op b = g;
      b.name = "attn_bmm_bwd";
      b.batch *= 2;  // gradients with respect to both inputs
      w.backward.push_back(b);
    }
    w.backward.push_back(memory("softmax_bwd", (m.dropout ? 5.0 : 3.0) * probs));
    if (!p.softmax_fusion) w.backward.push_back(memory("softmax_mask_fill_bwd", 2.0 * probs));
  }
}

// Bias gradients: a column sum of each biased linear's output gradient, one more read of it
// (Megatron-LM's grad_output.sum(0); the CUDA runtime's bias_grad kernels).
void add_bias_grads(LayerWork& w, const ModelSpec& m, const Shapes& s) {
  const double tokens = static_cast<double>(s.tokens);
  if (m.linear_bias || m.qkv_bias) w.backward.push_back(memory("qkv_bias_grad", tokens * static_cast<double>((s.q + 2 * s.kv) / s.t) * s.e));
  if (!m.linear_bias || m.moe.has_value()) return;
  const double act = s.sp_tokens * static_cast<double>(s.h) * s.e;
  const int64_t up_width = (m.ffn_kind == FfnKind::kSwiglu ? 2 : 1) * s.f / s.t;
  w.backward.push_back(memory("proj_bias_grad", act));
  w.backward.push_back(memory("fc1_bias_grad", tokens * static_cast<double>(up_width) * s.e));
  w.backward.push_back(memory("fc2_bias_grad", act));
}

LayerWork lower_layer(const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  LayerWork w;
  w.forward.reserve(40);  // a dense layer's ops with CP, FP8 and biases fit; saves regrowth per plan
  w.backward.reserve(64);
  const NormTraffic nt = norm_traffic(m, p);
  const bool sp = p.sequence_parallel;
  const double act = s.sp_tokens * static_cast<double>(s.h) * s.e;  // one (tokens x h) tensor on this rank
  // Norm: read input, write output (+ statistics); backward reads input, output grad, writes grad.
  w.forward.push_back(memory("norm1", 2 * act * nt.forward));
  w.backward.push_back(memory("norm1_bwd", 3 * act * nt.backward));
  if (m.mla) {
    add_mla_projections(w, m, p, s, nt.forward, nt.backward);
  } else {
    add_tp_boundary(w, s, sp, true);
    add_linear(w, "qkv", "qkv_dgrad", "qkv_wgrad", s.tokens, (s.q + 2 * s.kv) / s.t, s.h);
  }
  if (m.position == PositionKind::kRope && !m.mla) add_rope(w, m, p, s);
  add_attention(w, m, p, s);
  add_linear(w, "proj", "proj_dgrad", "proj_wgrad", s.tokens, s.h, s.q / s.t);
  add_tp_boundary(w, s, sp, false);
  w.forward.push_back(memory("dropout_residual", (m.dropout ? 3.5 : 3.0) * act));
  w.backward.push_back(memory("dropout_residual_bwd", (m.dropout ? 3.5 : 3.0) * act));
  tag_graph_scope(w.forward, 0, kGraphAttn);
  tag_graph_scope(w.backward, 0, kGraphAttn);
  const size_t mlp_forward = w.forward.size(), mlp_backward = w.backward.size();
  LayerMarks marks;
  marks.norm2 = w.forward.size();
  w.forward.push_back(memory("norm2", 2 * act * nt.forward));
  w.backward.push_back(memory("norm2_bwd", 3 * act * nt.backward));
  const bool moe = m.moe.has_value();
  marks.mlp_begin = w.forward.size();
  if (moe) {
    add_moe_ffn(w, m, p, s, marks);
  } else {
    add_tp_boundary(w, s, sp, true);
    add_ffn_core(w, m, s, kFfnNames, s.tokens, s.f / s.t, 1, p.bias_gelu_fusion);
    add_tp_boundary(w, s, sp, false);
  }
  marks.mlp_end = w.forward.size();
  w.forward.push_back(memory("dropout_residual", (m.dropout ? 3.5 : 3.0) * act));
  w.backward.push_back(memory("dropout_residual_bwd", (m.dropout ? 3.5 : 3.0) * act));

  tag_graph_scope(w.forward, mlp_forward, moe ? kGraphMoe : kGraphMlp);
  tag_graph_scope(w.backward, mlp_backward, moe ? kGraphMoe : kGraphMlp);
  const size_t bias_grads = w.backward.size();
  add_bias_grads(w, m, s);
  for (size_t i = bias_grads; i < w.backward.size(); ++i) {
    const std::string name = w.backward[i].name;
    w.backward[i].graph_scope = name == "qkv_bias_grad" || name == "proj_bias_grad" ? kGraphAttn : kGraphMlp;
  }
  add_fp8_conversions(w, m, p, s);
  add_lora(w, p.lora_rank, s.e);
  if (p.tp_comm_overlap) pair_tp_comm_overlaps(w, p, !moe);
  else if (p.tp_overlap) pair_backward_overlaps(w.backward);
  if (p.recompute == Recompute::kFull) {
    w.recompute = w.forward;
  } else if (p.recompute == Recompute::kSelective) {
    w.recompute = selective_recompute(m, p, w.forward, marks);
  } else if (p.recompute == Recompute::kSelectiveOp) {
    w.recompute = selective_op_recompute(m, w.forward, s);
  }
  return w;
}

}  // namespace

IterationWork lower_iteration(const ModelSpec& m, const ParallelPlan& p, const MemoryTarget& target) {
  IterationWork work;
  Shapes s;
  s.tokens = p.micro_batch * m.seq_len / p.cp;  // context parallelism splits the sequence
  s.h = m.hidden;
  s.q = m.attention_width();
  s.kv = m.kv_width();
  s.q_core = m.heads * m.qk_head_dim();
  s.k_core = m.kv_heads * m.qk_head_dim();
  s.f = m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden;
  s.t = p.tp;
  s.heads_per_rank = m.heads / p.tp;
  s.e = p.precision == Precision::kFp32 ? 4.0 : 2.0;
  s.sp_tokens = static_cast<double>(s.tokens) / (p.sequence_parallel ? static_cast<double>(p.tp) : 1.0);
  work.weight_bytes_per_param = state_bytes_per_param(p).weights;
  // Gathered in FP8; MXFP8 primary weights go through the gradient buffer in bf16 (Megatron-Core's
  // reuse_grad_buf_for_mxfp8_param_ag: MXFP8 data cannot be mapped into the parameter buffer).
  if (p.precision == Precision::kFp8 && p.fp8_params) work.weight_bytes_per_param = 1;
  work.grad_bytes_per_param = state_bytes_per_param(p).gradients;

  work.layer = lower_layer(m, p, s);
  if (m.moe && m.moe->dense_layers > 0) {
    // DeepSeek-V3's first three layers: the same attention, a dense FFN of ffn_hidden split over TP,
    // no router, permutation or token exchange (Megatron-Core's --moe-layer-freq pattern).
    ModelSpec dense = m;
    dense.moe.reset();
    Shapes dense_shapes = s;
    dense_shapes.f = m.ffn_hidden;
    work.dense_layer = lower_layer(dense, p, dense_shapes);
  }
  work.host_stack = p.host_stack;
  work.cuda_graphs = p.cuda_graphs;
  work.step_host_sync = p.pp > 1 && p.vpp <= 1 && !is_zero_bubble(p.schedule) && p.host_stack == HostStack::kTransformerEngine;
  work.v_placement = v_placement(p.schedule);
  if (p.ep_comm_overlap) {
    const int64_t chunks = p.vpp;
    const double passes = static_cast<double>(p.micro_batches() * chunks);
    const double alone = p.pp == 1 ? 1.0 : static_cast<double>((p.pp - 1) * 2 + (chunks - 1) * p.pp);
    work.ep_overlap_paired_share = std::max(0.0, passes - alone) / passes;
  }
  add_fp8_amax_reductions(work, m, p);
  work.memory = estimate_rank_memory(m, p, target);
  const RankMemory& rank_memory = work.memory;
  work.offloaded_layers = p.cpu_offload_layers;
  work.offloaded_layer_bytes = rank_memory.stages.front().offloaded_layer_bytes;
  const std::vector<int64_t> stage_layers = virtual_stage_layers(m, p);
  const double act = s.sp_tokens * static_cast<double>(s.h) * s.e;
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    StageWork w;
    w.stage = stage;
    for (int64_t c = 0; c < p.vpp; ++c) {
      w.chunk_layers.push_back(layers_run_by(stage_layers, m, p, virtual_stage_at(v_placement(p.schedule), p.pp, stage, c)));
      w.chunk_recomputed_layers.push_back(chunk_recompute_span(p, w.chunk_layers.back()).recomputed_layers);
      w.chunk_dense_layers.push_back(dense_layers_of_chunk(m, p, stage, c));
    }
    w.layers = rank_memory.stages[static_cast<size_t>(stage)].layers;
    // What trains: its gradients are reduced, its optimizer states updated (LoRA: the adapters).
    w.params = static_cast<double>(rank_memory.stages[static_cast<size_t>(stage)].trainable_params);
    w.expert_params = p.lora_rank > 0 ? 0.0 : static_cast<double>(rank_memory.stages[static_cast<size_t>(stage)].expert_params);
    if (stage == 0) add_embedding_ops(w, p, s);
    if (stage == place_of_virtual_stage(v_placement(p.schedule), p.pp, p.pp * p.vpp - 1).stage) {
      for (int64_t depth = 0; depth < m.mtp_layers; ++depth) add_mtp_ops(w, m, p, s);
      add_head_ops(w, m, p, s);
    }
    if (p.pp > 1) w.send_bytes = act;  // Megatron sends the (SP-split or scatter-gathered) activation
    w.params_per_layer = w.layers > 0 ? static_cast<double>(rank_memory.stages[static_cast<size_t>(stage)].layer_params) / static_cast<double>(w.layers) : 0.0;
    work.stages.push_back(std::move(w));
  }
  return work;
}

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kAllToAll: return "all-to-all";
    case CollectiveKind::kSendRecv: return "send/recv";
  }
  return "?";
}

}  // namespace trainsim
