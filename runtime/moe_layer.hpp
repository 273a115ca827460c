// An MoE layer's FFN on one rank, forward and backward, as Megatron-Core's MoELayer runs it with
// the all-to-all token dispatcher (plan/moe_lowering.cpp prices the same steps): the router (linear
// h -> experts, top-k, softmax over the chosen logits: runtime/moe_routing), the token copies
// permuted so each expert's are together, the dispatch all-to-all over the EP group, the local
// experts' FFNs (the model's ffn kind, expert_ffn_hidden wide), the combine all-to-all, and the
// copies summed back into their tokens with their router weights; shared experts, when the model
// has them, run on every token as one FFN shared_experts x expert_ffn_hidden wide. Dropless (no
// capacity factor, no copy is dropped); no auxiliary load-balancing loss (the parity tests need
// none, and the simulator assumes balanced routing anyway); experts are never split over TP.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ep_group.hpp"
#include "runtime/moe_routing.hpp"
#include "runtime/param.hpp"

namespace trainsim::cpu {

// One FFN's parameters (an expert, or the shared experts): w_1 (h, f or 2f with SwiGLU's
// [gate | up]), w_2 (f, h); the biases are null where the model has none.
struct FfnParams {
  Param* w_1 = nullptr;
  Param* b_1 = nullptr;
  Param* w_2 = nullptr;
  Param* b_2 = nullptr;
};

struct MoeParams {
  Param* router = nullptr;          // (h, experts), replicated
  std::vector<FfnParams> experts;   // this EP rank's experts, ids first_expert .. first_expert + experts / ep - 1
  FfnParams shared;                 // w_1 null without shared experts
};

struct MoeShape {
  int64_t experts = 0, top_k = 0;
  bool swiglu = false;
};

struct FfnCache {
  Matrix in, fc1, act;  // an expert's input rows (the shared FFN reads the layer's input instead)
};

struct MoeCache {
  Routing routing;
  DispatchLayout layout;
  ExpertBatches batches;
  std::vector<FfnCache> experts;  // per local expert
  Matrix copy_out;                // (T x k, h) each copy's expert output, in slot order (t*k + j)
  FfnCache shared;
};

// x: (T, h) this rank's tokens (the second norm's output). Every rank of `ep` must call it together.
Matrix moe_forward(const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, MoeCache& cache);
// Returns dx; accumulates the router's, the local experts' and the shared experts' gradients.
// The experts' gradients cover the copies every rank of the EP group sent them.
Matrix moe_backward(const Matrix& dy, const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, const MoeCache& cache);

}  // namespace trainsim::cpu
