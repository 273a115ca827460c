// An MoE layer's routed experts on one rank, forward and backward, as Megatron-Core's MoELayer runs
// them with the all-to-all token dispatcher (plan/moe_lowering.cpp prices the same steps): the router
// (linear h -> experts, top-k, softmax over the chosen logits: runtime/moe_routing), the token copies
// permuted so each expert's are together, the dispatch all-to-all over the EP group, the local
// experts' FFNs (the model's ffn kind, expert_ffn_hidden wide), the combine all-to-all, and the
// copies summed back into their tokens with their router weights. With expert TP (ep 1, tp > 1:
// the experts split over TP like a dense FFN) every rank of the TP group routes the same tokens,
// runs its slice of every expert and returns a partial sum for the caller to reduce. Shared
// experts are one more FFN (ffn_forward) that the stage runs beside (runtime/cpu/stage_moe.cpp).
// Dropless (no capacity factor, no copy is dropped); no auxiliary load-balancing loss (the parity
// tests need none, and the simulator assumes balanced routing anyway).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cpu/ep_group.hpp"
#include "runtime/cpu/tp_group.hpp"
#include "runtime/moe_routing.hpp"
#include "runtime/param.hpp"

namespace trainsim::cpu {

// One FFN's parameters (an expert, or the shared experts), or a TP rank's slice of them: w_1 (h, f
// or 2f with SwiGLU's [gate | up]; sliced: f / t, or [gate | up] of f / t each), b_1 likewise,
// w_2 (f, h; sliced: f / t rows), b_2 (1, h) whole; the biases are null where the model has none.
struct FfnParams {
  runtime::Param* w_1 = nullptr;
  runtime::Param* b_1 = nullptr;
  runtime::Param* w_2 = nullptr;
  runtime::Param* b_2 = nullptr;
};

struct MoeParams {
  runtime::Param* router = nullptr;         // (h, experts), replicated
  std::vector<FfnParams> experts;  // this EP rank's experts, ids first_expert .. first_expert + experts / ep - 1 (with expert TP, slices)
};

struct MoeShape {
  int64_t experts = 0, top_k = 0;
  bool swiglu = false;
  // Megatron-Core's all-gather dispatcher (moe_dispatcher allgather, with ep > 1): every EP rank
  // gathers all the group's tokens and routing, runs its experts on the copies routed to them, and
  // the partial outputs are reduce-scattered back (runtime/cpu/moe_allgather.cpp).
  bool allgather = false;
};

struct FfnCache {
  Matrix in, fc1, act;  // the FFN's input rows (kept by whoever runs it: an expert's here), FC1's output, its activation
};

// What the all-gather dispatcher keeps for the backward: the token counts of the EP ranks, every
// gathered token's experts and weights, and per local expert the gathered copies it ran (slot
// t * k + j of gathered token t) and their outputs.
struct AllGatherCache {
  std::vector<int64_t> rows_of;   // (ep) tokens each rank routes
  std::vector<int32_t> expert;    // (T_all x k) the gathered tokens' experts
  Matrix weight;                  // (T_all, k) their weights
  std::vector<std::vector<int64_t>> copies;  // per local expert: the gathered slots it ran
  std::vector<Matrix> out;        // per local expert: its outputs, in `copies` order
};

struct MoeCache {
  AllGatherCache gathered;  // the all-gather dispatcher's (MoeShape::allgather)
  runtime::Routing routing;
  runtime::DispatchLayout layout;
  runtime::ExpertBatches batches;
  std::vector<FfnCache> experts;  // per local expert
  Matrix copy_out;                // (T x k, h) each copy's expert output (partial with expert TP), in slot order (t*k + j)
};

// out = act(x W1 + b1) W2 (+ b2 where `output_bias`). For a TP slice the outputs of the group's
// ranks are partial sums, and exactly one of them (rank 0) adds b2.
Matrix ffn_forward(const Matrix& x, const FfnParams& p, bool swiglu, bool output_bias, FfnCache& cache);
// Returns dx (partial over the group for a slice); accumulates the FFN's gradients (b2's whole on
// every rank: each sees all of dout).
Matrix ffn_backward(const Matrix& dout, const Matrix& x, const FfnParams& p, bool swiglu, const FfnCache& cache);

// x: (T, h) the tokens this rank routes (the second norm's output). `expert_tp`: the group the
// experts are split over (a single-rank group: whole experts; only with ep 1); its ranks route the
// same x and each returns a partial sum over the group. Every rank of `ep` and of `expert_tp` must
// call it together.
Matrix moe_forward(const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, TpGroup& expert_tp, MoeCache& cache);
// Returns dx (a partial sum over `expert_tp` likewise: rank 0 adds the router's share); accumulates
// the router's and the local experts' gradients, the router's the same on every rank of `expert_tp`
// (the gradient of each copy's routing weight, (T, k), is all-reduced over it: each rank holds only
// its slices' share of every copy's output). The experts' gradients cover the copies every rank of
// the EP group sent them.
Matrix moe_backward(const Matrix& dy, const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, TpGroup& expert_tp,
                    const MoeCache& cache);

// The same with the all-gather dispatcher (whole experts, ep > 1): runtime/cpu/moe_allgather.cpp.
Matrix moe_forward_allgather(const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, MoeCache& cache);
Matrix moe_backward_allgather(const Matrix& dy, const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep,
                              const MoeCache& cache);

}  // namespace trainsim::cpu
