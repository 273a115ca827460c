// Building blocks of plan/lowering.cpp shared with the MoE lowering (plan/moe_lowering.cpp): op
// constructors, a linear layer's three GEMMs, the per-rank shapes of a layer and the TP region's
// boundary collectives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim::lowering {

inline Op gemm(const char* name, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  Op op;
  op.kind = OpKind::kGemm;
  op.name = name;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  return op;
}

inline Op memory(const char* name, double bytes) {
  Op op;
  op.kind = OpKind::kMemoryBound;
  op.name = name;
  op.bytes = bytes;
  return op;
}

inline Op collective(const char* name, CollectiveKind kind, GroupKind group, double bytes) {
  Op op;
  op.kind = OpKind::kCollective;
  op.name = name;
  op.collective = kind;
  op.group = group;
  op.bytes = bytes;
  return op;
}

// Forward/backward of a GEMM y = x W with x (tokens x k) and W (k x n): dgrad (tokens x k) and
// wgrad (k x n), each as many FLOPs as the forward; `batch` independent products (grouped experts).
inline void add_linear(LayerWork& w, const char* name, const char* dgrad, const char* wgrad, int64_t tokens, int64_t n,
                       int64_t k, int64_t batch = 1) {
  w.forward.push_back(gemm(name, tokens, n, k, batch));
  w.backward.push_back(gemm(dgrad, tokens, k, n, batch));
  w.backward.push_back(gemm(wgrad, k, n, tokens, batch));
}

struct Shapes {
  int64_t tokens, h, q, kv, f, heads_per_rank, t;
  // Widths of the attention core's Q and K (all heads): q and kv, or with MLA heads x qk_head_dim.
  int64_t q_core, k_core;
  double e;           // bytes per activation value
  double sp_tokens;   // tokens held by one rank outside the TP region (tokens / t with SP)
};

// Entering (`entering`) or leaving the tensor-parallel region; see plan/lowering.cpp.
void add_tp_boundary(LayerWork& w, const Shapes& s, bool sp, bool entering);

// Index of the `occurrence`-th op named `name` in `ops` (0: the first), -1 if none.
int32_t index_of(const std::vector<Op>& ops, const std::string& name, int32_t occurrence);

// Megatron-LM's backward TP overlaps, and Transformer Engine's overlap of every TP collective of
// the layer (`dense_ffn`: the FFN block too; an MoE layer's experts get none): plan/tp_overlap_lowering.cpp.
void pair_backward_overlaps(std::vector<Op>& backward);
void pair_tp_comm_overlaps(LayerWork& w, const ParallelPlan& p, bool dense_ffn);

// Multi-head latent attention from the pre-attention norm's output to the attention core's Q, K
// and V: down projections, latent norms (at the given traffic factors), the TP region's entry on
// the latents, up projections and the fused RoPE (plan/mla_lowering.cpp).
void add_mla_projections(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s, double norm_forward, double norm_backward);

// LoRA (ParallelPlan::lora_rank > 0): the frozen linears' weight gradients dropped, an adapter
// (A, B, the add) beside each of qkv, proj, fc1 and fc2 (plan/lora_lowering.cpp).
void add_lora(LayerWork& w, int64_t rank, double e);

// Bytes an RMSNorm kernel moves relative to one fused kernel (PyTorch's eager composite with
// ParallelPlan::norm eager; plan/lowering.cpp gives the measurement); 1 for fused kernels.
struct NormTraffic {
  double forward = 1.0, backward = 1.0;
};
NormTraffic norm_traffic(const ModelSpec& m, const ParallelPlan& p);

// Beside a pipeline stage's layers (plan/stage_end_lowering.cpp): the embedding on the first
// stage; the final norm, LM head and loss on the last, and before them each multi-token-prediction
// depth's lookup, norms, projection and second head (its transformer layer is one of the last
// chunk's layers).
void add_embedding_ops(StageWork& w, const ParallelPlan& p, const Shapes& s);
void add_head_ops(StageWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s);
void add_mtp_ops(StageWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s);

// The op names of an FFN's two linears (string literals: ops keep the pointer).
struct FfnNames {
  const char *up, *up_dgrad, *up_wgrad, *down, *down_dgrad, *down_wgrad;
};
inline constexpr FfnNames kFfnNames{"fc1", "fc1_dgrad", "fc1_wgrad", "fc2", "fc2_dgrad", "fc2_wgrad"};
inline constexpr FfnNames kSharedFfnNames{"shared_fc1", "shared_fc1_dgrad", "shared_fc1_wgrad",
                                          "shared_fc2", "shared_fc2_dgrad", "shared_fc2_wgrad"};

// An FFN's up (and gate) projection, activation and down projection over `tokens` rows of width
// `width` (per rank), `groups` independent FFNs (local experts) of that shape; a biased GELU's
// bias added apart without `bias_gelu_fusion` (ParallelPlan::bias_gelu_fusion).
void add_ffn_core(LayerWork& w, const ModelSpec& m, const Shapes& s, const FfnNames& names, int64_t tokens, int64_t width,
                  int64_t groups, bool bias_gelu_fusion);

// Q and K's RoPE (plan/rope_lowering.cpp): the fused kernel's read and write, or, with a YaRN
// attention factor (ModelSpec::rope_attention_factor, which Transformer Engine's fused kernel does
// not take), Megatron-Core's unfused PyTorch code: 10 bytes per byte of Q and K forward, 17
// backward, with the eager calls issuing them.
void add_rope(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s);

// Where a layer's parts sit in its forward op list, for selective recomputation by module.
// Marks the ops from `from` on that no block has claimed as `scope`'s (Op::graph_scope,
// CudaGraphScope): what a CUDA graph of that scope captures.
void tag_graph_scope(std::vector<Op>& ops, size_t from, uint32_t scope);

struct LayerMarks {
  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t norm2 = kNone;                           // the pre-MLP norm
  size_t mlp_begin = 0, mlp_end = 0;              // the MLP or MoE block, [begin, end)
  size_t routed_act = kNone;                      // MoE: the experts' activation
  size_t shared_begin = kNone, shared_end = kNone;  // MoE: the shared experts
};

// An MoE layer's FFN: router, permutation, (with ep > 1) all-to-all dispatch, the local experts'
// grouped GEMMs, combine, and the shared experts (plan/moe_lowering.cpp); marks where the experts'
// activation and the shared experts are.
void add_moe_ffn(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s, LayerMarks& marks);

// The forward ops Megatron-Core's selective recomputation runs again before a layer's backward,
// by module (ParallelPlan::recompute_modules; plan/selective_recompute.cpp).
std::vector<Op> selective_recompute(const ModelSpec& m, const ParallelPlan& p, const std::vector<Op>& forward, const LayerMarks& marks);

// FP8 (precision fp8): Transformer Engine's casts and transposes around every linear, FP8
// all-gathers, and per chunk the amax reductions and per iteration the weight casts
// (plan/fp8_lowering.cpp). add_fp8_conversions runs before recomputation copies the forward.
void add_fp8_conversions(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s);
void add_fp8_amax_reductions(IterationWork& work, const ModelSpec& m, const ParallelPlan& p);

}  // namespace trainsim::lowering
