// CPU kernels. Formulas: layer norm backward dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
// with g = dy * gamma; GELU tanh approximation and its derivative; attention
// softmax(Q K^T / sqrt(d) + causal mask) V and its backward dS = P * (dP - rowsum(dP * P)).
#include "kernels/cpu/cpu_kernels.hpp"

#include <cmath>
#include <limits>

#include "kernels/cpu/op_clock.hpp"

namespace trainsim::cpu {

namespace {
constexpr float kLayerNormEps = 1e-5f;
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
}  // namespace

Matrix layer_norm(const Matrix& x, const Vector& gamma, const Vector& beta, LayerNormCache& cache) {
  const Eigen::Index rows = x.rows(), cols = x.cols();
  cache.normalized.resize(rows, cols);
  cache.rstd.resize(rows);
  Matrix y(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const float mean = x.row(r).mean();
    const float var = (x.row(r).array() - mean).square().mean();
    const float rstd = 1.0f / std::sqrt(var + kLayerNormEps);
    cache.rstd(r) = rstd;
    cache.normalized.row(r) = (x.row(r).array() - mean) * rstd;
    y.row(r) = cache.normalized.row(r).array() * gamma.array() + beta.array();
  }
  return y;
}

Matrix layer_norm_backward(const Matrix& dy, const Vector& gamma, const LayerNormCache& cache, Vector& dgamma, Vector& dbeta) {
  const Eigen::Index rows = dy.rows(), cols = dy.cols();
  dgamma += (dy.array() * cache.normalized.array()).colwise().sum().matrix();
  dbeta += dy.colwise().sum();
  Matrix dx(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::Array<float, 1, Eigen::Dynamic> g = dy.row(r).array() * gamma.array();
    const float mean_g = g.mean();
    const float mean_gx = (g * cache.normalized.row(r).array()).mean();
    dx.row(r) = cache.rstd(r) * (g - mean_g - cache.normalized.row(r).array() * mean_gx);
  }
  return dx;
}

Matrix rms_norm(const Matrix& x, const Vector& gamma, LayerNormCache& cache) {
  const Eigen::Index rows = x.rows(), cols = x.cols();
  cache.normalized.resize(rows, cols);
  cache.rstd.resize(rows);
  Matrix y(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const float rstd = 1.0f / std::sqrt(x.row(r).squaredNorm() / static_cast<float>(cols) + kLayerNormEps);
    cache.rstd(r) = rstd;
    cache.normalized.row(r) = x.row(r) * rstd;
    y.row(r) = cache.normalized.row(r).array() * gamma.array();
  }
  return y;
}

Matrix rms_norm_backward(const Matrix& dy, const Vector& gamma, const LayerNormCache& cache, Vector& dgamma) {
  const Eigen::Index rows = dy.rows(), cols = dy.cols();
  dgamma += (dy.array() * cache.normalized.array()).colwise().sum().matrix();
  Matrix dx(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::Array<float, 1, Eigen::Dynamic> g = dy.row(r).array() * gamma.array();
    const float mean_gx = (g * cache.normalized.row(r).array()).mean();
    dx.row(r) = cache.rstd(r) * (g - cache.normalized.row(r).array() * mean_gx);
  }
  return dx;
}

RotaryTables rotary_tables(const std::vector<int32_t>& positions, int64_t head_dim, double theta) {
  const int64_t half = head_dim / 2, rows = static_cast<int64_t>(positions.size());
  RotaryTables t{Matrix(rows, half), Matrix(rows, half)};
  for (int64_t i = 0; i < half; ++i) {
    const double frequency = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    for (int64_t r = 0; r < rows; ++r) {
      const double angle = static_cast<double>(positions[static_cast<size_t>(r)]) * frequency;
      t.cos(r, i) = static_cast<float>(std::cos(angle));
      t.sin(r, i) = static_cast<float>(std::sin(angle));
    }
  }
  return t;
}

RotaryTables rotary_tables(int64_t seq, int64_t head_dim, double theta) {
  std::vector<int32_t> positions(static_cast<size_t>(seq));
  for (int64_t p = 0; p < seq; ++p) positions[static_cast<size_t>(p)] = static_cast<int32_t>(p);
  return rotary_tables(positions, head_dim, theta);
}

void rotary_embedding(Matrix& qkv, const RotaryTables& tables, int64_t heads, int64_t kv_heads, int64_t head_dim, bool inverse) {
  const int64_t half = head_dim / 2, seq = tables.cos.rows();
  const float turn = inverse ? -1.0f : 1.0f;
  const int64_t rotated_heads = heads + kv_heads;  // Q's heads, then K's; V is left alone
  for (Eigen::Index r = 0; r < qkv.rows(); ++r) {
    const int64_t p = r % seq;
    float* row = qkv.row(r).data();
    const float* cos = tables.cos.row(p).data();
    const float* sin = tables.sin.row(p).data();
    for (int64_t h = 0; h < rotated_heads; ++h) {
      float* x = row + h * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half], c = cos[i], s = turn * sin[i];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
      }
    }
  }
}

void rotary_embedding(Matrix& qkv, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim, double theta, bool inverse) {
  rotary_embedding(qkv, rotary_tables(seq, head_dim, theta), heads, kv_heads, head_dim, inverse);
}

Matrix residual_add(const Matrix& x, const Matrix& branch, const Matrix* bias) {
  if (bias == nullptr) return x + branch;
  return (x + branch).rowwise() + bias->row(0);
}

void add_column_sums(const Matrix& dy, Matrix& sums) { sums.row(0) += dy.colwise().sum(); }

// Eigen's vectorised tanh (a rational approximation, within ~1e-6 of std::tanh here): its cost
// does not depend on the values. std::tanh's did (glibc takes shorter paths for small |x|: 2.6 ms
// on 512x512 values of std 0.02, 4.8 ms at std 1), so a calibration on random values could not
// price the runtime's GELU, and the vectorised one is ~10x faster.
Matrix gelu(const Matrix& x) {
  const auto v = x.array();
  return (0.5f * v * (1.0f + (kGeluC * (v + 0.044715f * v.cube())).tanh())).matrix();
}

Matrix gelu_backward(const Matrix& dy, const Matrix& x) {
  using RowArray = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto v = x.array();
  const RowArray t = (kGeluC * (v + 0.044715f * v.cube())).tanh();
  const RowArray du = kGeluC * (1.0f + 3.0f * 0.044715f * v.square());
  return (dy.array() * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t.square()) * du)).matrix();
}

void causal_softmax_rows(Matrix& s, float scale) {
  const Eigen::Index seq = s.cols();
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    const Eigen::Index row_in_block = i % seq;
    for (Eigen::Index j = row_in_block + 1; j < seq; ++j) s(i, j) = -std::numeric_limits<float>::infinity();
    const float max = s.row(i).maxCoeff();
    s.row(i) = ((s.row(i).array() - max) * scale).exp();
    s.row(i) /= s.row(i).sum();
  }
}

Matrix softmax_backward_rows(const Matrix& p, const Matrix& dp, float scale) {
  return (scale * p.array()) * (dp.array().colwise() - (dp.array() * p.array()).rowwise().sum());
}

Matrix swiglu(const Matrix& x) {
  const Eigen::Index f = x.cols() / 2;
  const auto gate = x.leftCols(f).array();
  return (gate / (1.0f + (-gate).exp()) * x.rightCols(f).array()).matrix();
}

Matrix swiglu_backward(const Matrix& dy, const Matrix& x) {
  const Eigen::Index f = x.cols() / 2;
  const Eigen::ArrayXXf gate = x.leftCols(f).array(), up = x.rightCols(f).array(), d = dy.array();
  const Eigen::ArrayXXf sig = 1.0f / (1.0f + (-gate).exp());
  Matrix dx(x.rows(), x.cols());
  dx.leftCols(f) = (d * up * sig * (1.0f + gate * (1.0f - sig))).matrix();  // d silu(g)/dg = sig (1 + g (1 - sig))
  dx.rightCols(f) = (d * gate * sig).matrix();
  return dx;
}

namespace {
// Column offsets of query head h and of its kv head in the [Q | K | V] layout.
struct HeadColumns {
  Eigen::Index q, k, v;
};
HeadColumns head_columns(int64_t h, int64_t heads, int64_t kv_heads, int64_t d) {
  const int64_t kv = h / (heads / kv_heads);
  return {h * d, heads * d + kv * d, (heads + kv_heads) * d + kv * d};
}
}  // namespace

Matrix causal_attention(const Matrix& qkv, int64_t batch, int64_t seq, int64_t heads, int64_t d, AttentionCache& cache, int64_t kv_heads) {
  if (kv_heads == 0) kv_heads = heads;
  Matrix out(batch * seq, heads * d);
  cache.probabilities.assign(static_cast<size_t>(batch * heads), Matrix());
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const HeadColumns c = head_columns(h, heads, kv_heads, d);
      const auto q = qkv.block(b * seq, c.q, seq, d);
      const auto k = qkv.block(b * seq, c.k, seq, d);
      const auto v = qkv.block(b * seq, c.v, seq, d);
      Matrix s = timed_op(OpCategory::kAttentionGemm, [&] { return Matrix(q * k.transpose()); });
      timed_op(OpCategory::kSoftmax, [&] { causal_softmax_rows(s, scale); });
      timed_op(OpCategory::kAttentionGemm, [&] { out.block(b * seq, h * d, seq, d).noalias() = s * v; });
      cache.probabilities[static_cast<size_t>(b * heads + h)] = std::move(s);
    }
  }
  return out;
}

Matrix causal_attention_backward(const Matrix& dout, const Matrix& qkv, int64_t batch, int64_t seq, int64_t heads, int64_t d,
                                 const AttentionCache& cache, int64_t kv_heads) {
  if (kv_heads == 0) kv_heads = heads;
  Matrix dqkv = Matrix::Zero(qkv.rows(), qkv.cols());
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const HeadColumns c = head_columns(h, heads, kv_heads, d);
      const Matrix& p = cache.probabilities[static_cast<size_t>(b * heads + h)];
      const auto q = qkv.block(b * seq, c.q, seq, d);
      const auto k = qkv.block(b * seq, c.k, seq, d);
      const auto v = qkv.block(b * seq, c.v, seq, d);
      const auto dout_h = dout.block(b * seq, h * d, seq, d);
      const Matrix dp = timed_op(OpCategory::kAttentionGemm, [&] {
        dqkv.block(b * seq, c.v, seq, d).noalias() += p.transpose() * dout_h;  // dV (summed over the group)
        return Matrix(dout_h * v.transpose());
      });
      const Matrix ds = timed_op(OpCategory::kSoftmax, [&] { return softmax_backward_rows(p, dp, scale); });
      timed_op(OpCategory::kAttentionGemm, [&] {
        dqkv.block(b * seq, c.q, seq, d).noalias() = ds * k;               // dQ
        dqkv.block(b * seq, c.k, seq, d).noalias() += ds.transpose() * q;  // dK
      });
    }
  }
  return dqkv;
}

void adamw_update(float* p, const float* g, float* m, float* v, int64_t count, const AdamWStep& s) {
  const float c1 = 1.0f - std::pow(s.beta1, static_cast<float>(s.step));
  const float c2 = 1.0f - std::pow(s.beta2, static_cast<float>(s.step));
  for (int64_t i = 0; i < count; ++i) {
    const float gi = g[i] * s.grad_scale;
    m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
    v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
    p[i] -= s.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + s.eps);
  }
}

double cross_entropy(const Matrix& logits, const std::vector<int32_t>& targets, float scale, Matrix& dlogits) {
  dlogits.resize(logits.rows(), logits.cols());
  double loss = 0;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    const float max = logits.row(r).maxCoeff();
    const Eigen::Array<float, 1, Eigen::Dynamic> e = (logits.row(r).array() - max).exp();
    const float sum = e.sum();
    const int32_t t = targets[static_cast<size_t>(r)];
    loss += -(static_cast<double>(logits(r, t)) - max - std::log(static_cast<double>(sum)));
    dlogits.row(r) = e / sum * scale;
    dlogits(r, t) -= scale;
  }
  return loss;
}

Matrix row_max(const Matrix& logits) { return logits.rowwise().maxCoeff(); }

Matrix shard_softmax_stats(const Matrix& logits, const Matrix& max, const std::vector<int32_t>& targets, int64_t first, Matrix& exp) {
  exp = (logits.colwise() - max.col(0)).array().exp().matrix();
  Matrix stats(logits.rows(), 2);
  stats.col(0) = exp.rowwise().sum();
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    const int64_t local = targets[static_cast<size_t>(r)] - first;
    stats(r, 1) = local >= 0 && local < logits.cols() ? logits(r, local) : 0.0f;
  }
  return stats;
}

double shard_cross_entropy_grad(const Matrix& exp, const Matrix& max, const Matrix& stats, const std::vector<int32_t>& targets,
                                int64_t first, float scale, Matrix& dlogits) {
  double loss = 0;
  dlogits.resize(exp.rows(), exp.cols());
  for (Eigen::Index r = 0; r < exp.rows(); ++r) {
    const float sum = stats(r, 0);
    loss += -(static_cast<double>(stats(r, 1)) - max(r, 0) - std::log(static_cast<double>(sum)));
    dlogits.row(r) = exp.row(r) * (scale / sum);
    const int64_t local = targets[static_cast<size_t>(r)] - first;
    if (local >= 0 && local < exp.cols()) dlogits(r, local) -= scale;
  }
  return loss;
}

}  // namespace trainsim::cpu
