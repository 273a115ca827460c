// The CPU backend's kernels (fp32, Eigen): LayerNorm and RMSNorm, rotary embeddings, GELU and
// SwiGLU, causal multi-head attention and softmax cross-entropy, each with its backward. Row-major (tokens x features) matrices. These are
// the reference implementations the CUDA backend will be checked against.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace trainsim::cpu {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<float, 1, Eigen::Dynamic, Eigen::RowMajor>;

struct LayerNormCache {
  Matrix normalized;  // (T, h) x-hat
  Eigen::VectorXf rstd;  // (T)
};

// y = (x - mean) / sqrt(var + eps) * gamma + beta, per row.
Matrix layer_norm(const Matrix& x, const Vector& gamma, const Vector& beta, LayerNormCache& cache);
// Returns dx; accumulates dgamma, dbeta.
Matrix layer_norm_backward(const Matrix& dy, const Vector& gamma, const LayerNormCache& cache, Vector& dgamma, Vector& dbeta);
// RMSNorm (Llama): y = x / sqrt(mean(x^2) + eps) * gamma. The cache's `normalized` is x / rms.
Matrix rms_norm(const Matrix& x, const Vector& gamma, LayerNormCache& cache);
// Returns dx; accumulates dgamma.
Matrix rms_norm_backward(const Matrix& dy, const Vector& gamma, const LayerNormCache& cache, Vector& dgamma);

// Rotary position embedding (Su et al. 2021) in the rotate-half layout of Llama and Megatron-LM, on
// the Q and K blocks of every row of qkv (laid out as for causal_attention); row r is position
// r % seq. Each head's dimension i < d/2 pairs with i + d/2 and turns by position x theta^(-2i/d).
// `inverse` turns back: the backward of the rotation (it is orthogonal).
void rotary_embedding(Matrix& qkv, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim, double theta, bool inverse);
// The same with the angles' cosines and sines computed once (a model keeps them, as Megatron's
// RotaryEmbedding caches its frequencies): then the rotation costs only its pass over Q and K.
struct RotaryTables {
  Matrix cos, sin;  // (seq, head_dim / 2)
};
RotaryTables rotary_tables(int64_t seq, int64_t head_dim, double theta);
// Row r holds the angles of position positions[r] (a CP rank's chunks: the rotation then turns
// local row r of each sequence by its true position).
RotaryTables rotary_tables(const std::vector<int32_t>& positions, int64_t head_dim, double theta);
void rotary_embedding(Matrix& qkv, const RotaryTables& tables, int64_t heads, int64_t kv_heads, int64_t head_dim, bool inverse);

// The residual add x + branch, with the branch's bias added in the same pass when there is one
// (Megatron-LM's bias-dropout-add, without dropout); also the backward's sum of two gradients.
Matrix residual_add(const Matrix& x, const Matrix& branch, const Matrix* bias = nullptr);
// sums (1, n) += the column sums of dy (T, n): a bias's gradient over the tokens.
void add_column_sums(const Matrix& dy, Matrix& sums);

// tanh-approximated GELU (GPT-2).
Matrix gelu(const Matrix& x);
Matrix gelu_backward(const Matrix& dy, const Matrix& x);

// SwiGLU: x is (T, 2f) = [gate | up] per row; returns silu(gate) * up, (T, f).
Matrix swiglu(const Matrix& x);
Matrix swiglu_backward(const Matrix& dy, const Matrix& x);  // returns dx, (T, 2f)

// Row-wise softmax of scale x causal scores in place (entries above the diagonal of each s x s
// block become 0), and its backward ds = scale x p * (dp - rowsum(dp * p)). The attention's
// 1/sqrt(d) rides in the softmax's pass, as Megatron-LM's fused scale-mask-softmax carries it.
void causal_softmax_rows(Matrix& scores, float scale = 1.0f);
Matrix softmax_backward_rows(const Matrix& p, const Matrix& dp, float scale = 1.0f);

struct AttentionCache {
  std::vector<Matrix> probabilities;  // per (sequence, head): (s, s) softmax of the causal scores
};

// qkv: (B*s, (heads + 2*kv_heads)*d) laid out [Q (heads*d) | K (kv*d) | V (kv*d)]; kv_heads 0 or
// equal to heads is MHA, fewer is GQA (query head h reads kv head h / (heads / kv_heads)).
// Returns (B*s, heads*d).
Matrix causal_attention(const Matrix& qkv, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim, AttentionCache& cache,
                        int64_t kv_heads = 0);
// Returns dqkv (same layout as qkv); GQA sums dK, dV over the query heads sharing them.
Matrix causal_attention_backward(const Matrix& dout, const Matrix& qkv, int64_t batch, int64_t seq, int64_t heads,
                                 int64_t head_dim, const AttentionCache& cache, int64_t kv_heads = 0);

// One AdamW step on `count` fp32 values in place (the runtime's optimizer): g' = g * grad_scale,
// m = b1 m + (1-b1) g', v = b2 v + (1-b2) g'^2, p -= lr (m / c1) / (sqrt(v / c2) + eps) with the
// bias corrections c = 1 - b^step.
struct AdamWStep {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, grad_scale = 1.0f;
  int64_t step = 1;
};
void adamw_update(float* p, const float* g, float* m, float* v, int64_t count, const AdamWStep& s);

// Mean-free cross-entropy: returns the SUM of -log p(target) over rows, and writes dlogits for
// that sum scaled by `scale` (the caller's normalisation, e.g. 1 / tokens in the global batch).
double cross_entropy(const Matrix& logits, const std::vector<int32_t>& targets, float scale, Matrix& dlogits);

// Vocabulary-parallel cross-entropy (Megatron-LM's): each TP rank holds the logits of ids
// [first, first + logits.cols()). The caller reduces over the ranks between the steps:
//   1. max = row_max(logits)                                  -> element-wise max over ranks
//   2. stats = shard_softmax_stats(logits, max, targets, first, exp) -> (T, 2) [sum of exp, target
//      logit or 0 where another rank holds the target]        -> summed over ranks
//   3. loss = shard_cross_entropy_grad(exp, max, stats, targets, first, scale, dlogits): the same
//      summed loss as cross_entropy on the whole row, and this shard's dlogits.
Matrix row_max(const Matrix& logits);  // (T, 1)
Matrix shard_softmax_stats(const Matrix& logits, const Matrix& max, const std::vector<int32_t>& targets, int64_t first, Matrix& exp);
double shard_cross_entropy_grad(const Matrix& exp, const Matrix& max, const Matrix& stats, const std::vector<int32_t>& targets,
                                int64_t first, float scale, Matrix& dlogits);

}  // namespace trainsim::cpu
