// The CPU backend's own non-GEMM kernels timed over sizes, as memory-bound tables keyed the way
// plan/lowering counts their bytes (norm: 2x the activation forward, 3x backward; GELU 2x / 3x;
// residual add 3x, with the branch bias; bias gradient 1x, the column sums; rotary 2x Q and K;
// softmax over attention scores 2x / 3x; cross-entropy 3x the fp32 logits). On a CPU these are
// far from bandwidth-bound (GELU's tanh, softmax's exp), so a copy is a poor stand-in for them.
#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "calibrate/cpu_calibrator.hpp"
#include "calibrate/sampler.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim {

namespace {

using cpu::Matrix;

cpu::Matrix random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
  return m;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::function<double()> timed(const std::function<void()>& body) {
  return [body] {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_s();
    body();
    double t = now_s() - start;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
  };
}

}  // namespace

std::vector<MemoryBoundTable> cpu_kernel_sweep(const CpuCalibrationOptions& o, const SamplerOptions& sampler) {
  const std::vector<int64_t> rows = o.quick ? std::vector<int64_t>{16, 256, 2048, 8192}
                                            : std::vector<int64_t>{16, 64, 256, 1024, 4096, 16384, 32768};
  const int64_t h = 256;  // feature width (the per-element cost hardly depends on it)
  std::vector<MemoryBoundTable> tables;
  auto table = [&](const std::string& kernel, double bytes_per_element, const std::function<std::function<void()>(int64_t)>& make) {
    MemoryBoundTable t;
    t.kernel = kernel;
    for (int64_t r : rows) {
      const std::function<void()> body = make(r);
      t.points.push_back({bytes_per_element * static_cast<double>(r * h), sample_until_stable(timed(body), sampler)});
    }
    tables.push_back(t);
  };
  const cpu::Vector gamma = cpu::Vector::Ones(h), beta = cpu::Vector::Zero(h);
  table("layernorm", 2 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 1));
    return [x, &gamma, &beta] { cpu::LayerNormCache c; volatile float sink = cpu::layer_norm(*x, gamma, beta, c)(0, 0); (void)sink; };
  });
  table("layernorm_bwd", 3 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 2));
    auto c = std::make_shared<cpu::LayerNormCache>();
    cpu::layer_norm(*x, gamma, beta, *c);
    return [x, c, &gamma] {
      cpu::Vector dg = cpu::Vector::Zero(gamma.size()), db = cpu::Vector::Zero(gamma.size());
      volatile float sink = cpu::layer_norm_backward(*x, gamma, *c, dg, db)(0, 0);
      (void)sink;
    };
  });
  table("gelu", 2 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 3));
    return [x] { volatile float sink = cpu::gelu(*x)(0, 0); (void)sink; };
  });
  table("gelu_bwd", 3 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 4));
    return [x] { volatile float sink = cpu::gelu_backward(*x, *x)(0, 0); (void)sink; };
  });
  table("softmax", 2 * 4, [&](int64_t r) {  // rows of causal scores, h columns = sequence
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 5));
    return [x] { Matrix s = *x; cpu::causal_softmax_rows(s, 0.125f); volatile float sink = s(0, 0); (void)sink; };
  });
  table("softmax_bwd", 3 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 6));
    return [x] { volatile float sink = cpu::softmax_backward_rows(*x, *x, 0.125f)(0, 0); (void)sink; };
  });
  table("cross_entropy", 3 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 7));
    auto targets = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(r), 3);
    return [x, targets] { Matrix d; volatile double sink = cpu::cross_entropy(*x, *targets, 1.0f, d); (void)sink; };
  });
  table("residual", 3 * 4, [&](int64_t r) {  // x + branch + bias, as the runtime's residual add
    auto x = std::make_shared<Matrix>(random_matrix(r, h, 11));
    auto branch = std::make_shared<Matrix>(random_matrix(r, h, 12));
    auto bias = std::make_shared<Matrix>(random_matrix(1, h, 13));
    return [x, branch, bias] { volatile float sink = cpu::residual_add(*x, *branch, bias.get())(0, 0); (void)sink; };
  });
  table("bias_grad", 4, [&](int64_t r) {  // column sums of a gradient
    auto dy = std::make_shared<Matrix>(random_matrix(r, h, 14));
    auto sums = std::make_shared<Matrix>(Matrix::Zero(1, h));
    return [dy, sums] { cpu::add_column_sums(*dy, *sums); };
  });
  table("rotary", 2 * 2 * 4, [&](int64_t r) {  // Q and K (h wide each) read and written; heads of 64
    auto qkv = std::make_shared<Matrix>(random_matrix(r, 3 * h, 15));
    auto tables = std::make_shared<cpu::RotaryTables>(cpu::rotary_tables(128, 64, 10000.0));
    return [qkv, tables, h] { cpu::rotary_embedding(*qkv, *tables, h / 64, h / 64, 64, false); };
  });
  table("swiglu", 3 * 4, [&](int64_t r) {  // (r, 2h) in, (r, h) out
    auto x = std::make_shared<Matrix>(random_matrix(r, 2 * h, 8));
    return [x] { volatile float sink = cpu::swiglu(*x)(0, 0); (void)sink; };
  });
  table("swiglu_bwd", 5 * 4, [&](int64_t r) {
    auto x = std::make_shared<Matrix>(random_matrix(r, 2 * h, 9));
    auto dy = std::make_shared<Matrix>(random_matrix(r, h, 10));
    return [x, dy] { volatile float sink = cpu::swiglu_backward(*dy, *x)(0, 0); (void)sink; };
  });
  // The optimizer as the runtime runs it on a bucket: weights packed into a flat buffer, AdamW,
  // unpacked. Sized in the simulator's convention (34 bytes per parameter).
  table("adamw", 34, [&](int64_t r) {
    const int64_t n = r * h;
    auto state = std::make_shared<std::vector<float>>(static_cast<size_t>(4 * n), 0.5f);  // p, g, m, v
    auto flat = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
    return [state, flat, n] {
      float* p = state->data();
      std::copy(p, p + n, flat->data());
      cpu::AdamWStep s;
      cpu::adamw_update(flat->data(), p + n, p + 2 * n, p + 3 * n, n, s);
      std::copy(flat->data(), flat->data() + n, p);
    };
  });
  if (o.progress) o.progress("runtime kernels done");
  return tables;
}

}  // namespace trainsim
