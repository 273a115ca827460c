// An MoE layer's routing, as data: the router's top-k choice and weights (and their backward), and
// where each token copy goes (the permutation that groups the copies by expert, the counts per
// expert and per expert-parallel rank). Pure functions on this rank's tokens; the all-to-alls and
// the experts' FFNs are runtime/cpu/moe_layer's. No capacity: every copy is kept (dropless).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::runtime {

using cpu::Matrix;  // host tensors are the CPU kernels' (kernels/cpu/cpu_kernels.hpp)

// The router's choice for T tokens. Weights are Mixtral's gating G(x) = softmax(top_k(x W_g))
// (Jiang et al. 2024, "Mixtral of Experts", eq. 2), which equals a softmax over all experts
// renormalised over the top k (Qwen3-MoE's norm_topk_prob; Hugging Face's MixtralSparseMoeBlock
// computes it that way): both are softmax over the chosen logits.
struct Routing {
  int64_t top_k = 0;
  std::vector<int32_t> expert;  // (T x k) token t's experts in slots t*k .. t*k + k-1, by falling logit (ties: lower id first)
  Matrix weight;                // (T, k) their weights: softmax over the chosen logits, each row sums to 1
};

// logits: (T, experts). Requires 1 <= top_k <= experts.
Routing route_top_k(const Matrix& logits, int64_t top_k);

// The backward of the weights: dweight (T, k) -> dlogits (T, experts), zero on the experts not
// chosen (top-k selection is piecewise constant). Softmax over the chosen logits:
// dl_e(j) = w_j (dw_j - sum_i w_i dw_i).
Matrix route_top_k_backward(const Routing& routing, const Matrix& dweight, int64_t experts);

// Where this rank's T x k copies go. Expert e lives on EP rank e / (experts / ep).
struct DispatchLayout {
  std::vector<int64_t> slot;         // (T x k) row i of the permuted buffer holds copy slot[i] (= t*k + j): experts ascending, tokens in order
  std::vector<int64_t> expert_rows;  // (experts) copies routed to each expert
  std::vector<int64_t> rank_rows;    // (ep) copies sent to each EP rank: the sum over its experts
};
DispatchLayout dispatch_layout(const Routing& routing, int64_t experts, int64_t ep);

// What arrives after the dispatch: `received` holds, for each source rank s, the counts it sent
// this rank for each of its `local` experts (received[s * local + j]). The rows arrive grouped by
// source, then by expert; each expert's FFN wants its rows together.
struct ExpertBatches {
  std::vector<int64_t> source_rows;  // (ep) rows from each source rank
  std::vector<int64_t> expert_rows;  // (local) rows for each local expert
  std::vector<int64_t> row;          // expert-major row i (local expert 0's first) is received row row[i]
};
ExpertBatches expert_batches(const std::vector<int64_t>& received, int64_t ep, int64_t local);

}  // namespace trainsim::runtime
