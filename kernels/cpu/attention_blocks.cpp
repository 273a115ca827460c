// Block attention, its log-sum-exp merge and its backward; see attention_blocks.hpp. The products
// are timed as attention GEMMs, the masking, exponentials and merge as softmax (the categories the
// unfused path's ops fall in).
#include "kernels/cpu/attention_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/op_clock.hpp"

namespace trainsim::cpu {

namespace {
constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

// p = exp(s - row_offset) with the causal mask applied (entries above the diagonal 0).
void exponentiate_rows(Matrix& s, const float* offset, BlockMask mask) {
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    const Eigen::Index visible = mask == BlockMask::kCausal ? i + 1 : s.cols();
    s.row(i).head(visible) = (s.row(i).head(visible).array() - offset[i]).exp();
    s.row(i).tail(s.cols() - visible).setZero();
  }
}
}  // namespace

void attention_block(const ConstBlock& q, const ConstBlock& k, const ConstBlock& v, float scale, BlockMask mask, Matrix& out, float* lse) {
  Matrix s = timed_op(OpCategory::kAttentionGemm, [&] { return Matrix(scale * (q * k.transpose())); });
  {
    const ScopedOpTimer timer(OpCategory::kSoftmax);
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
      const Eigen::Index visible = mask == BlockMask::kCausal ? i + 1 : s.cols();
      lse[i] = s.row(i).head(visible).maxCoeff();
    }
    exponentiate_rows(s, lse, mask);
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
      const float sum = s.row(i).sum();
      s.row(i) /= sum;
      lse[i] += std::log(sum);
    }
  }
  timed_op(OpCategory::kAttentionGemm, [&] { out.noalias() = s * v; });
}

void merge_attention_block(MutableBlock out, float* lse, const ConstBlock& out_b, const float* lse_b) {
  const ScopedOpTimer timer(OpCategory::kSoftmax);
  for (Eigen::Index i = 0; i < out.rows(); ++i) {
    if (lse_b[i] == kMinusInfinity) continue;
    if (lse[i] == kMinusInfinity) {
      out.row(i) = out_b.row(i);
      lse[i] = lse_b[i];
      continue;
    }
    const float top = std::max(lse[i], lse_b[i]);
    const float merged = top + std::log(std::exp(lse[i] - top) + std::exp(lse_b[i] - top));
    out.row(i) = std::exp(lse[i] - merged) * out.row(i) + std::exp(lse_b[i] - merged) * out_b.row(i);
    lse[i] = merged;
  }
}

void attention_block_backward(const ConstBlock& q, const ConstBlock& k, const ConstBlock& v, const ConstBlock& dout, const float* lse,
                              const float* delta, float scale, BlockMask mask, MutableBlock dq, MutableBlock dk, MutableBlock dv) {
  Matrix p = timed_op(OpCategory::kAttentionGemm, [&] { return Matrix(scale * (q * k.transpose())); });
  timed_op(OpCategory::kSoftmax, [&] { exponentiate_rows(p, lse, mask); });
  const Matrix dp = timed_op(OpCategory::kAttentionGemm, [&] {
    dv.noalias() += p.transpose() * dout;
    return Matrix(dout * v.transpose());
  });
  const Matrix ds = timed_op(OpCategory::kSoftmax, [&] {
    const Eigen::Map<const Eigen::VectorXf> d(delta, p.rows());
    return Matrix(scale * (p.array() * (dp.array().colwise() - d.array())));
  });
  timed_op(OpCategory::kAttentionGemm, [&] {
    dq.noalias() += ds * k;
    dk.noalias() += ds.transpose() * q;
  });
}

}  // namespace trainsim::cpu
