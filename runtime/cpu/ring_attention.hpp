// Context parallelism's attention, as Megatron-Core runs it (Transformer Engine's p2p ring): each
// sequence is cut into 2 x cp chunks and CP rank r holds chunks r and 2cp - 1 - r (the causal load
// balancing), every op of a layer runs on those s / cp token rows, and the attention is a ring of
// cp steps: at each step the rank attends its queries to the K, V block it holds (its own first,
// then each previous rank's), merges the partial result by log-sum-exp, and passes the block on.
// The backward passes K, V and their gradients round the ring, each gradient returning to its
// owner. Exact: the causal mask is evaluated on true positions, chunk by chunk. Blocking send/recv
// per step (no overlap of the transfer with the attention).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "runtime/context_chunks.hpp"
#include "runtime/cpu/cp_group.hpp"

namespace trainsim::cpu {

struct RingShape {
  int64_t batch = 1;     // sequences; each has 2 x chunk rows on this rank
  int64_t heads = 1;     // query heads (this TP rank's)
  int64_t kv_heads = 1;  // = heads for MHA, fewer for GQA
  int64_t head_dim = 1;
};

struct RingAttentionCache {
  Matrix lse;  // (heads, T): log-sum-exp of each query row's scaled scores over all its keys
};

// qkv: (B * s_local, (heads + 2 kv) d) laid out as causal_attention's ([Q | K | V]), each sequence's
// s_local rows this rank's two chunks (context_positions). Returns (B * s_local, heads d): the
// causal attention of these queries over every earlier position of the sequence on any CP rank.
// Collective over the CP ring.
Matrix ring_attention(const Matrix& qkv, const RingShape& shape, CpGroup& cp, RingAttentionCache& cache);

// Returns dqkv (qkv's layout) given the output's gradient and `out` (ring_attention's result);
// dK, dV gather the gradient from every CP rank whose queries read them. Collective.
Matrix ring_attention_backward(const Matrix& dout, const Matrix& qkv, const Matrix& out, const RingShape& shape, CpGroup& cp,
                               const RingAttentionCache& cache);

}  // namespace trainsim::cpu
