// Megatron's TP splits of a full tensor (runtime/tp_split): the slices put back together give the
// whole tensor, block by block for fused weights, and an FFN (a dense one, an expert or the shared
// experts) split over tp ranks the way the runtime splits it, FC1 by columns of each block and FC2
// by rows, gives partial outputs that sum to the whole FFN's.
#include <catch2/catch.hpp>

#include <random>

#include "runtime/cpu/moe_layer.hpp"
#include "runtime/tp_split.hpp"

using namespace trainsim::cpu;
using namespace trainsim::runtime;

namespace {

Matrix random_matrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

Param param(Matrix value) {
  Param p;
  p.grad = Matrix::Zero(value.rows(), value.cols());
  p.value = std::move(value);
  return p;
}

}  // namespace

TEST_CASE("row slices of every TP rank, stacked in rank order, give the whole tensor") {
  const Matrix full = random_matrix(6, 4, 1);
  for (const int64_t tp : {1, 2, 3, 6}) {
    Matrix stacked(0, 4);
    for (int64_t r = 0; r < tp; ++r) {
      const Matrix part = row_slice(full, tp, r);
      CHECK(part.rows() == 6 / tp);
      Matrix grown(stacked.rows() + part.rows(), 4);
      grown << stacked, part;
      stacked = grown;
    }
    CHECK(stacked == full);
  }
}

TEST_CASE("a fused weight's block slices hold each rank's share of every block, in block order") {
  // Columns [Q: 4 | K: 2 | V: 2], two ranks: rank 0 takes Q0-1, K0, V0; rank 1 Q2-3, K1, V1.
  Matrix full(1, 8);
  full << 0, 1, 2, 3, 10, 11, 20, 21;
  Matrix want0(1, 4), want1(1, 4);
  want0 << 0, 1, 10, 20;
  want1 << 2, 3, 11, 21;
  CHECK(block_slice(full, {4, 2, 2}, 2, 0) == want0);
  CHECK(block_slice(full, {4, 2, 2}, 2, 1) == want1);
  CHECK(block_slice(full, {4, 2, 2}, 1, 0) == full);
}

TEST_CASE("an FFN split over tp ranks (FC1 by columns of each block, FC2 by rows, b2 on rank 0) sums to the whole FFN") {
  const int64_t h = 5, f = 6, tokens = 4;
  for (const bool swiglu : {false, true}) {
    const int64_t gates = swiglu ? 2 : 1;
    const std::vector<int64_t> blocks(static_cast<size_t>(gates), f);  // SwiGLU: [gate | up]
    Param w_1 = param(random_matrix(h, gates * f, 2)), b_1 = param(random_matrix(1, gates * f, 3));
    Param w_2 = param(random_matrix(f, h, 4)), b_2 = param(random_matrix(1, h, 5));
    const Matrix x = random_matrix(tokens, h, 6);
    FfnCache whole_cache;
    const Matrix whole = ffn_forward(x, FfnParams{&w_1, &b_1, &w_2, &b_2}, swiglu, true, whole_cache);
    for (const int64_t tp : {2, 3}) {
      INFO((swiglu ? "SwiGLU" : "GELU") << ", tp " << tp);
      Matrix sum = Matrix::Zero(tokens, h);
      for (int64_t r = 0; r < tp; ++r) {
        Param w_1r = param(block_slice(w_1.value, blocks, tp, r)), b_1r = param(block_slice(b_1.value, blocks, tp, r));
        Param w_2r = param(row_slice(w_2.value, tp, r));
        FfnCache cache;
        sum += ffn_forward(x, FfnParams{&w_1r, &b_1r, &w_2r, &b_2}, swiglu, r == 0, cache);
      }
      CHECK((sum - whole).cwiseAbs().maxCoeff() < 1e-5f * whole.cwiseAbs().maxCoeff());
    }
  }
}
