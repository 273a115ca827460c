// The op categories that `predict` prices and `run` times: one vocabulary for the simulator, the
// CPU runtime and the CUDA runtime, so `compare` can line them up below the per-phase figures.
// Header-only enum and names (the runtime's kernels include it without linking plan/); the
// mapping from a lowered op's name to its category is op_category_of (common/op_category.cpp).
// Communication other than TP collectives (DP, PP) and the bubble stay in the per-phase figures.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace trainsim {

enum class OpCategory : int {
  kGemmQkv,        // QKV projection: forward, input-gradient and weight-gradient GEMMs
  kGemmProj,       // attention output projection
  kGemmFc1,        // MLP up (and SwiGLU gate) projection
  kGemmFc2,        // MLP down projection
  kGemmLmHead,     // LM head (logits)
  kGemmOther,      // measured only: GEMMs whose role the measurement cannot tell (a profiler
                   // trace without shapes, or with shapes that match no weight of the model)
  kAttentionGemm,  // unfused attention: QK^T and AV per head, and their backward products
  kAttentionFused, // a fused (flash) attention kernel, forward or backward
  kSoftmax,        // the attention softmax (unfused path) and its backward
  kNorm,           // LayerNorm / RMSNorm, forward and backward
  kActivation,     // GELU / SwiGLU
  kResidualBias,   // residual adds, bias adds and bias gradients (dropout when the model has it)
  kRotary,         // rotary position embedding of Q and K
  kEmbedding,      // token (+ position) embedding lookup and its gradient scatter
  kCrossEntropy,   // softmax cross-entropy over the logits (the loss)
  kOptimizer,      // the optimizer step (norm, clipping, AdamW) outside communication
  kTpComm,         // TP / SP / CP collectives, as long as they hold the compute stream
  kMoeRouter,      // MoE: the router's GEMMs and its softmax / top-k
  kMoePermute,     // MoE: gathering each expert's tokens and scattering them back (weighted)
  kEpComm,         // MoE: the expert-parallel all-to-alls (token dispatch and combine)
  kFp8Cast,        // FP8: casts and transposes to FP8, the amax reductions and weight casts
  kOther,          // measured only: compute-phase time outside every timed op (temporaries,
                   // copies, allocation and the page faults it causes, loop overhead)
};

inline constexpr size_t kOpCategoryCount = static_cast<size_t>(OpCategory::kOther) + 1;

// JSON keys, in the enum's order.
inline constexpr std::array<std::string_view, kOpCategoryCount> kOpCategoryKeys = {
    "gemm_qkv", "gemm_proj", "gemm_fc1", "gemm_fc2", "gemm_lm_head", "gemm_other", "attention_gemm", "attention_fused", "softmax",
    "norm",     "activation", "residual_bias", "rotary", "embedding", "cross_entropy", "optimizer", "tp_comm",
    "moe_router", "moe_permute", "ep_comm", "fp8_cast", "other"};

inline constexpr std::string_view op_category_key(OpCategory c) { return kOpCategoryKeys[static_cast<size_t>(c)]; }

// The category of a plan/lowering op, by its name ("qkv_wgrad" -> kGemmQkv, "fc1_bias_grad" ->
// kResidualBias, "tp_allreduce" -> kTpComm). Defined in common/op_category.cpp; an unknown name is an
// internal error (every lowered op has a category).
OpCategory op_category_of(std::string_view lowered_op_name);

// Seconds per iteration per category, split by the pass that ran them (recomputation counts as
// backward, as the per-phase figures do; the optimizer as forward: it has one column).
struct OpCategoryTimes {
  std::array<double, kOpCategoryCount> forward_s{};
  std::array<double, kOpCategoryCount> backward_s{};
  double total_s(OpCategory c) const { return forward_s[static_cast<size_t>(c)] + backward_s[static_cast<size_t>(c)]; }
};

}  // namespace trainsim
