// Attention over one block of keys at a time, the pieces ring attention (context parallelism) is
// built from: a block's partial result (its softmax output and the log-sum-exp of its scores), the
// exact merge of two partial results over disjoint keys, and a block's backward given the merged
// log-sum-exp (as FlashAttention-2 recomputes the probabilities: Dao 2023, Algorithm 2). One
// sequence and one head per call; row-major (tokens x head_dim) operands. No communication here.
#pragma once

#include <Eigen/Core>

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::cpu {

// kCausal: queries and keys are the same positions (query i sees keys 0..i of the block);
// kFull: every key precedes every query.
enum class BlockMask { kFull, kCausal };

using ConstBlock = Eigen::Ref<const Matrix>;
using MutableBlock = Eigen::Ref<Matrix>;

// out (n, d) = softmax(scale q k^T) v over this block's keys (m of them), lse[i] = log of row i's
// sum of exp(scale q k^T) (so the softmax over several blocks can be put back together).
void attention_block(const ConstBlock& q, const ConstBlock& k, const ConstBlock& v, float scale, BlockMask mask, Matrix& out, float* lse);

// Folds a block's partial result (out_b, lse_b) into the running one (out, lse) over disjoint keys:
// lse' = log(e^lse + e^lse_b), out' = e^(lse - lse') out + e^(lse_b - lse') out_b, per row. A row
// with lse = -inf has seen no key yet (its out is ignored).
void merge_attention_block(MutableBlock out, float* lse, const ConstBlock& out_b, const float* lse_b);

// The backward of one block given the whole attention's lse and delta[i] = rowsum(dout * out)
// (out the merged output): p = exp(scale q k^T - lse) masked, dv += p^T dout,
// ds = p * (dout v^T - delta), dq += scale ds k, dk += scale ds^T q.
void attention_block_backward(const ConstBlock& q, const ConstBlock& k, const ConstBlock& v, const ConstBlock& dout, const float* lse,
                              const float* delta, float scale, BlockMask mask, MutableBlock dq, MutableBlock dk, MutableBlock dv);

}  // namespace trainsim::cpu
