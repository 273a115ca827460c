// The CUDA backend's kernels and GEMMs (kernels/cuda/) against the CPU references
// (trainsim::cpu, or plain loops where there is none) on random inputs. Inputs are rounded to bf16
// first, so both sides see the same numbers and the differences come from the GPU's bf16 outputs
// and intermediates. Error = ||gpu - cpu||_2 / ||cpu||_2 over the whole tensor. Bounds:
//   fp32 outputs from exact inputs (weight-grad GEMM, dgamma, dbeta, embedding grads, AdamW,
//     sums of squares, the loss): 1e-4 — only the order of fp32 additions differs;
//   bf16 outputs: 1e-2 — one rounding to bf16 is up to 2^-9 = 0.2 % per element, plus fp32 sums;
//   attention: 1e-2 forward, 2e-2 backward — P (and dS) are rounded to bf16 before their
//     tensor-core products (as in FlashAttention-2), and the backward chains three such products.
// Without a visible GPU every test warns "no GPU: skipped" and passes.
#ifdef TRAINSIM_HAVE_CUDA

#include <catch2/catch.hpp>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/kernels.cuh"
#include "tests/gpu/device_test_support.hpp"

using namespace trainsim::gpu_test;  // DeviceArray, random_values, relative_error, the tolerances, SKIP_WITHOUT_GPU

TEST_CASE("CUDA GEMM: forward, input-grad (B transposed) and weight-grad (A transposed, fp32 += ) match fp32 loops",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t tokens = 67, in = 80, out = 96;  // odd row count: not a multiple of any tile
  const auto x = random_values(static_cast<size_t>(tokens * in), 1), w = random_values(static_cast<size_t>(in * out), 2);
  const auto dy = random_values(static_cast<size_t>(tokens * out), 3);
  const auto dw0 = random_values(static_cast<size_t>(in * out), 4);
  const Matrix xm = to_matrix(x, tokens, in), wm = to_matrix(w, in, out), dym = to_matrix(dy, tokens, out);
  DeviceArray<bf16> dx_in(to_bf16(x)), dw_in(to_bf16(w)), ddy(to_bf16(dy));
  DeviceArray<bf16> y(static_cast<size_t>(tokens * out)), dx(static_cast<size_t>(tokens * in));
  DeviceArray<float> dw(dw0);
  trainsim::cuda::Gemm gemm;
  using trainsim::cuda::OutputType;
  gemm.matmul(dx_in.get(), false, dw_in.get(), false, y.get(), OutputType::kBf16, tokens, out, in, 1.0f, 0.0f, nullptr);
  gemm.matmul(ddy.get(), false, dw_in.get(), true, dx.get(), OutputType::kBf16, tokens, in, out, 1.0f, 0.0f, nullptr);
  gemm.matmul(dx_in.get(), true, ddy.get(), false, dw.get(), OutputType::kFp32, in, out, tokens, 1.0f, 1.0f, nullptr);
  CHECK(relative_error(download_float(y), Matrix(xm * wm)) < kBf16Tolerance);
  CHECK(relative_error(download_float(dx), Matrix(dym * wm.transpose())) < kBf16Tolerance);
  CHECK(relative_error(dw.download(), Matrix(to_matrix(dw0, in, out) + xm.transpose() * dym)) < kFp32Tolerance);
}

TEST_CASE("CUDA element-wise kernels: conversions, add, scale, fill, bias and its gradient match loops", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t rows = 37, cols = 72, n = rows * cols;  // 72: vector path; odd n below: scalar tail
  const auto a = random_values(static_cast<size_t>(n), 5), b = random_values(static_cast<size_t>(n), 6);
  const auto bias = random_values(static_cast<size_t>(cols), 7);
  DeviceArray<float> af(a);
  DeviceArray<bf16> ab(static_cast<size_t>(n)), bb(to_bf16(b)), biasb(to_bf16(bias));
  trainsim::cuda::fp32_to_bf16(af.get(), ab.get(), n, nullptr);
  DeviceArray<float> back(static_cast<size_t>(n));
  trainsim::cuda::bf16_to_fp32(ab.get(), back.get(), n, nullptr);
  CHECK(relative_error(back.download(), a) == 0.0);  // a is bf16-exact
  trainsim::cuda::add(ab.get(), bb.get(), ab.get(), n - 3, nullptr);  // aliased output, scalar tail
  std::vector<float> want(a);
  for (int64_t i = 0; i < n - 3; ++i) want[static_cast<size_t>(i)] = a[static_cast<size_t>(i)] + b[static_cast<size_t>(i)];
  CHECK(relative_error(download_float(ab), want) < kBf16Tolerance);

  trainsim::cuda::scale_fp32(af.get(), 0.5f, n, nullptr);
  std::vector<float> half(a);
  for (float& v : half) v *= 0.5f;
  CHECK(relative_error(af.download(), half) == 0.0);
  trainsim::cuda::fill_fp32(af.get(), 3.0f, n - 1, nullptr);
  const auto filled = af.download();
  CHECK(filled[0] == 3.0f);
  CHECK(filled[static_cast<size_t>(n - 2)] == 3.0f);
  CHECK(filled[static_cast<size_t>(n - 1)] == half[static_cast<size_t>(n - 1)]);
  DeviceArray<float> addend(b);
  trainsim::cuda::accumulate_fp32(af.get(), addend.get(), n - 1, nullptr);
  const auto accumulated = af.download();
  CHECK(accumulated[0] == 3.0f + b[0]);
  CHECK(accumulated[static_cast<size_t>(n - 1)] == half[static_cast<size_t>(n - 1)]);  // past the count: untouched

  DeviceArray<bf16> y(to_bf16(b));
  trainsim::cuda::add_bias(y.get(), biasb.get(), rows, cols, nullptr);
  std::vector<float> biased(b);
  for (int64_t i = 0; i < n; ++i) biased[static_cast<size_t>(i)] += bias[static_cast<size_t>(i % cols)];
  CHECK(relative_error(download_float(y), biased) < kBf16Tolerance);

  const auto dbias0 = random_values(static_cast<size_t>(cols), 8);
  DeviceArray<float> dbias(dbias0);
  trainsim::cuda::bias_grad(bb.get(), dbias.get(), rows, cols, nullptr);
  std::vector<float> sums(dbias0);
  for (int64_t i = 0; i < n; ++i) sums[static_cast<size_t>(i % cols)] += b[static_cast<size_t>(i)];
  CHECK(relative_error(dbias.download(), sums) < kFp32Tolerance);
}

TEST_CASE("CUDA GELU and SwiGLU match the CPU GELU and SwiGLU, forward and backward", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t width : {64, 45}) {  // vector and scalar paths
    const int64_t rows = 19, n = rows * width;
    const auto x = random_values(static_cast<size_t>(n), 9, -3.0f, 3.0f), dy = random_values(static_cast<size_t>(n), 10);
    DeviceArray<bf16> xd(to_bf16(x)), dyd(to_bf16(dy)), y(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
    trainsim::cuda::gelu_forward(xd.get(), y.get(), n, nullptr);
    trainsim::cuda::gelu_backward(dyd.get(), xd.get(), dx.get(), n, nullptr);
    const Matrix xm = to_matrix(x, rows, width);
    CHECK(relative_error(download_float(y), trainsim::cpu::gelu(xm)) < kBf16Tolerance);
    CHECK(relative_error(download_float(dx), trainsim::cpu::gelu_backward(to_matrix(dy, rows, width), xm)) < kBf16Tolerance);

    // SwiGLU: x (rows, 2 width) = [gate | up].
    const auto xs = random_values(static_cast<size_t>(2 * n), 11, -3.0f, 3.0f);
    DeviceArray<bf16> xsd(to_bf16(xs)), ys(static_cast<size_t>(n)), dxs(static_cast<size_t>(2 * n));
    trainsim::cuda::swiglu_forward(xsd.get(), ys.get(), rows, width, nullptr);
    trainsim::cuda::swiglu_backward(dyd.get(), xsd.get(), dxs.get(), rows, width, nullptr);
    const Matrix xsm = to_matrix(xs, rows, 2 * width);
    const Matrix want_y = trainsim::cpu::swiglu(xsm);
    const Matrix want_dx = trainsim::cpu::swiglu_backward(to_matrix(dy, rows, width), xsm);
    CHECK(relative_error(download_float(ys), want_y) < kBf16Tolerance);
    CHECK(relative_error(download_float(dxs), want_dx) < kBf16Tolerance);
  }
}

TEST_CASE("CUDA embedding forward and backward match loops, repeated tokens included", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t vocab = 50, seq = 12, batch = 3, rows = batch * seq, hidden = 40;
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) tokens[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7) % 13);  // repeats
  const auto wte = random_values(static_cast<size_t>(vocab * hidden), 12), wpe = random_values(static_cast<size_t>(seq * hidden), 13);
  const auto dout = random_values(static_cast<size_t>(rows * hidden), 14);
  DeviceArray<int32_t> tok(tokens);
  DeviceArray<bf16> wted(to_bf16(wte)), wped(to_bf16(wpe)), out(static_cast<size_t>(rows * hidden)), doutd(to_bf16(dout));
  DeviceArray<float> dwte(std::vector<float>(static_cast<size_t>(vocab * hidden), 0.0f));
  DeviceArray<float> dwpe(std::vector<float>(static_cast<size_t>(seq * hidden), 0.0f));
  trainsim::cuda::embedding_forward(tok.get(), wted.get(), wped.get(), out.get(), rows, seq, hidden, nullptr);
  trainsim::cuda::embedding_backward(tok.get(), doutd.get(), dwte.get(), dwpe.get(), rows, seq, hidden, nullptr);
  std::vector<float> want(static_cast<size_t>(rows * hidden)), want_dwte(wte.size(), 0.0f), want_dwpe(wpe.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < hidden; ++c) {
      const size_t t = static_cast<size_t>(tokens[static_cast<size_t>(r)] * hidden + c);
      const size_t p = static_cast<size_t>((r % seq) * hidden + c), i = static_cast<size_t>(r * hidden + c);
      want[i] = wte[t] + wpe[p];
      want_dwte[t] += dout[i];
      want_dwpe[p] += dout[i];
    }
  }
  CHECK(relative_error(download_float(out), want) < kBf16Tolerance);
  CHECK(relative_error(dwte.download(), want_dwte) < kFp32Tolerance);
  CHECK(relative_error(dwpe.download(), want_dwpe) < kFp32Tolerance);
}

TEST_CASE("CUDA layer norm matches the CPU layer norm, forward and backward", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t cols : {768, 100}) {  // vector and scalar paths
    const int64_t rows = 29;
    const auto x = random_values(static_cast<size_t>(rows * cols), 15, -2.0f, 3.0f);
    const auto gamma = random_values(static_cast<size_t>(cols), 16), beta = random_values(static_cast<size_t>(cols), 17);
    const auto dy = random_values(static_cast<size_t>(rows * cols), 18);
    DeviceArray<bf16> xd(to_bf16(x)), gd(to_bf16(gamma)), bd(to_bf16(beta)), dyd(to_bf16(dy));
    DeviceArray<bf16> y(static_cast<size_t>(rows * cols)), dx(static_cast<size_t>(rows * cols));
    DeviceArray<float> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
    DeviceArray<float> dgamma(std::vector<float>(static_cast<size_t>(cols), 0.5f));
    DeviceArray<float> dbeta(std::vector<float>(static_cast<size_t>(cols), -0.5f));
    trainsim::cuda::layer_norm_forward(xd.get(), gd.get(), bd.get(), y.get(), mean.get(), rstd.get(), rows, cols, nullptr);
    trainsim::cuda::layer_norm_backward(dyd.get(), xd.get(), gd.get(), mean.get(), rstd.get(), dx.get(), dgamma.get(),
                                        dbeta.get(), rows, cols, nullptr);
    trainsim::cpu::LayerNormCache cache;
    const trainsim::cpu::Vector g = to_matrix(gamma, 1, cols), be = to_matrix(beta, 1, cols);
    const Matrix want_y = trainsim::cpu::layer_norm(to_matrix(x, rows, cols), g, be, cache);
    trainsim::cpu::Vector want_dgamma = trainsim::cpu::Vector::Constant(cols, 0.5f);
    trainsim::cpu::Vector want_dbeta = trainsim::cpu::Vector::Constant(cols, -0.5f);
    const Matrix want_dx = trainsim::cpu::layer_norm_backward(to_matrix(dy, rows, cols), g, cache, want_dgamma, want_dbeta);
    CHECK(relative_error(download_float(y), want_y) < kBf16Tolerance);
    CHECK(relative_error(download_float(dx), want_dx) < kBf16Tolerance);
    CHECK(relative_error(dgamma.download(), Matrix(want_dgamma)) < kFp32Tolerance);
    CHECK(relative_error(dbeta.download(), Matrix(want_dbeta)) < kFp32Tolerance);
    std::vector<float> want_rstd(cache.rstd.data(), cache.rstd.data() + rows);
    CHECK(relative_error(rstd.download(), want_rstd) < kFp32Tolerance);
  }
}

TEST_CASE("CUDA RMSNorm matches the CPU RMSNorm, forward and backward", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t cols : {4096, 100}) {  // vector and scalar paths
    const int64_t rows = 29;
    const auto x = random_values(static_cast<size_t>(rows * cols), 25, -2.0f, 3.0f);
    const auto gamma = random_values(static_cast<size_t>(cols), 26);
    const auto dy = random_values(static_cast<size_t>(rows * cols), 27);
    DeviceArray<bf16> xd(to_bf16(x)), gd(to_bf16(gamma)), dyd(to_bf16(dy));
    DeviceArray<bf16> y(static_cast<size_t>(rows * cols)), dx(static_cast<size_t>(rows * cols));
    DeviceArray<float> rstd(static_cast<size_t>(rows));
    DeviceArray<float> dgamma(std::vector<float>(static_cast<size_t>(cols), 0.5f));
    trainsim::cuda::rms_norm_forward(xd.get(), gd.get(), y.get(), rstd.get(), rows, cols, nullptr);
    trainsim::cuda::rms_norm_backward(dyd.get(), xd.get(), gd.get(), rstd.get(), dx.get(), dgamma.get(), rows, cols, nullptr);
    trainsim::cpu::LayerNormCache cache;
    const trainsim::cpu::Vector g = to_matrix(gamma, 1, cols);
    const Matrix want_y = trainsim::cpu::rms_norm(to_matrix(x, rows, cols), g, cache);
    trainsim::cpu::Vector want_dgamma = trainsim::cpu::Vector::Constant(cols, 0.5f);
    const Matrix want_dx = trainsim::cpu::rms_norm_backward(to_matrix(dy, rows, cols), g, cache, want_dgamma);
    CHECK(relative_error(download_float(y), want_y) < kBf16Tolerance);
    CHECK(relative_error(download_float(dx), want_dx) < kBf16Tolerance);
    CHECK(relative_error(dgamma.download(), Matrix(want_dgamma)) < kFp32Tolerance);
    std::vector<float> want_rstd(cache.rstd.data(), cache.rstd.data() + rows);
    CHECK(relative_error(rstd.download(), want_rstd) < kFp32Tolerance);
  }
}

TEST_CASE("CUDA rotary embedding matches the CPU's on Q and K, leaves V alone, and its inverse turns back", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  // GQA (8 query heads, 2 kv heads), head_dim 128, two sequences of 300 positions; Llama 3's base.
  const int64_t seq = 300, rows = 2 * seq, heads = 8, kv = 2, d = 128, width = (heads + 2 * kv) * d;
  const auto x = random_values(static_cast<size_t>(rows * width), 28);
  DeviceArray<bf16> qkv(to_bf16(x));
  trainsim::cuda::rotary_embedding(qkv.get(), rows, seq, heads, kv, d, 500000.0, false, nullptr);
  Matrix want = to_matrix(x, rows, width);
  trainsim::cpu::rotary_embedding(want, seq, heads, kv, d, 500000.0, false);
  const std::vector<float> got = download_float(qkv);
  CHECK(relative_error(got, want) < kBf16Tolerance);
  bool v_untouched = true;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = (heads + kv) * d; c < width; ++c) v_untouched &= got[static_cast<size_t>(r * width + c)] == x[static_cast<size_t>(r * width + c)];
  }
  CHECK(v_untouched);
  trainsim::cuda::rotary_embedding(qkv.get(), rows, seq, heads, kv, d, 500000.0, true, nullptr);
  CHECK(relative_error(download_float(qkv), x) < kBf16Tolerance);
}

TEST_CASE("CUDA embedding without a position table (RoPE models) is the token embedding alone", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t vocab = 50, seq = 12, rows = 2 * seq, hidden = 64;
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) tokens[static_cast<size_t>(r)] = static_cast<int32_t>((r * 5) % 11);
  const auto wte = random_values(static_cast<size_t>(vocab * hidden), 29), dout = random_values(static_cast<size_t>(rows * hidden), 30);
  DeviceArray<int32_t> tok(tokens);
  DeviceArray<bf16> wted(to_bf16(wte)), out(static_cast<size_t>(rows * hidden)), doutd(to_bf16(dout));
  DeviceArray<float> dwte(std::vector<float>(static_cast<size_t>(vocab * hidden), 0.0f));
  trainsim::cuda::embedding_forward(tok.get(), wted.get(), nullptr, out.get(), rows, seq, hidden, nullptr);
  trainsim::cuda::embedding_backward(tok.get(), doutd.get(), dwte.get(), nullptr, rows, seq, hidden, nullptr);
  std::vector<float> want(static_cast<size_t>(rows * hidden)), want_dwte(wte.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < hidden; ++c) {
      const size_t t = static_cast<size_t>(tokens[static_cast<size_t>(r)] * hidden + c), i = static_cast<size_t>(r * hidden + c);
      want[i] = wte[t];
      want_dwte[t] += dout[i];
    }
  }
  CHECK(relative_error(download_float(out), want) < kBf16Tolerance);
  CHECK(relative_error(dwte.download(), want_dwte) < kFp32Tolerance);
}

TEST_CASE("CUDA causal softmax matches the CPU's on rows of several sequences, seq not a multiple of the block",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t seq = 300, rows = 3 * seq;  // row r is query r % seq (the GPU calibrator's "softmax" table)
  const auto x = random_values(static_cast<size_t>(rows * seq), 30, -4.0f, 4.0f);
  DeviceArray<bf16> scores(to_bf16(x));
  trainsim::cuda::causal_softmax(scores.get(), rows, seq, nullptr);
  Matrix want = to_matrix(x, rows, seq);
  trainsim::cpu::causal_softmax_rows(want);
  CHECK(relative_error(download_float(scores), want) < kBf16Tolerance);
}

TEST_CASE("CUDA cross-entropy matches the CPU cross-entropy for vocabularies from 256 to 128k", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t vocab : {256, 1001, 131072}) {  // 1001: scalar path
    const int64_t rows = 9;
    const float scale = 1.0f / 64;
    const auto logits = random_values(static_cast<size_t>(rows * vocab), 19, -4.0f, 4.0f);
    std::vector<int32_t> targets(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) targets[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7919) % vocab);
    DeviceArray<bf16> ld(to_bf16(logits)), dl(static_cast<size_t>(rows * vocab));
    DeviceArray<int32_t> td(targets);
    DeviceArray<float> loss(std::vector<float>{1.0f});  // accumulates
    trainsim::cuda::cross_entropy(ld.get(), td.get(), dl.get(), loss.get(), rows, vocab, scale, nullptr);
    Matrix want_dlogits;
    const double want_loss = trainsim::cpu::cross_entropy(to_matrix(logits, rows, vocab), targets, scale, want_dlogits);
    CHECK(std::abs(loss.download()[0] - (1.0 + want_loss)) < kFp32Tolerance * (1.0 + want_loss));
    CHECK(relative_error(download_float(dl), want_dlogits) < kBf16Tolerance);
  }
}

TEST_CASE("CUDA AdamW and the masked sum of squares match the CPU trainer's update", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t n = 1003;
  const auto p0 = random_values(static_cast<size_t>(n), 20), g = random_values(static_cast<size_t>(n), 21);
  const auto m0 = random_values(static_cast<size_t>(n), 22, -0.1f, 0.1f), v0 = random_values(static_cast<size_t>(n), 23, 0.0f, 0.01f);
  std::vector<float> mask(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) mask[static_cast<size_t>(i)] = i % 3 == 0 ? 0.0f : 1.0f;
  DeviceArray<float> pd(p0), gd(g), md(m0), vd(v0), maskd(mask);
  DeviceArray<double> sum(std::vector<double>{0.5});
  DeviceArray<bf16> weight(static_cast<size_t>(n));
  trainsim::cuda::sum_of_squares(gd.get(), maskd.get(), n, sum.get(), nullptr);
  trainsim::cuda::AdamW settings;
  settings.lr = 1e-2f;
  settings.step = 3;
  const float clip = 0.7f;
  trainsim::cuda::adamw(pd.get(), gd.get(), md.get(), vd.get(), weight.get(), n, settings, clip, nullptr);

  double want_sum = 0.5;
  std::vector<float> p(p0), m(m0), v(v0);
  const float c1 = 1.0f - std::pow(settings.beta1, 3.0f), c2 = 1.0f - std::pow(settings.beta2, 3.0f);
  for (size_t i = 0; i < p.size(); ++i) {
    want_sum += static_cast<double>(mask[i]) * g[i] * g[i];
    const float gi = g[i] * clip;
    m[i] = settings.beta1 * m[i] + (1 - settings.beta1) * gi;
    v[i] = settings.beta2 * v[i] + (1 - settings.beta2) * gi * gi;
    p[i] -= settings.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + settings.eps);
  }
  CHECK(std::abs(sum.download()[0] - want_sum) < 1e-9 * want_sum);
  CHECK(relative_error(md.download(), m) < kFp32Tolerance);
  CHECK(relative_error(vd.download(), v) < kFp32Tolerance);
  CHECK(relative_error(pd.download(), p) < kFp32Tolerance);
  CHECK(relative_error(download_float(weight), p) < kBf16Tolerance);
}

namespace {

struct AttentionCase {
  int64_t batch, seq, heads, kv_heads, head_dim;
};

// MHA and GQA, head_dim 64 and 128 (and 32, computed padded), seq a multiple of the 64-row tile and not.
const std::vector<AttentionCase> kAttentionCases = {
    {2, 64, 2, 2, 64}, {2, 100, 4, 2, 64}, {1, 130, 4, 1, 128}, {1, 33, 2, 2, 128}, {2, 77, 6, 3, 32},
};

struct AttentionData {
  AttentionCase c;
  std::vector<float> qkv, dout;
  Matrix want_out, want_dqkv;
  std::vector<Matrix> want_probs;

  explicit AttentionData(const AttentionCase& ac) : c(ac) {
    const int64_t rows = c.batch * c.seq, width = (c.heads + 2 * c.kv_heads) * c.head_dim;
    qkv = random_values(static_cast<size_t>(rows * width), 24);
    dout = random_values(static_cast<size_t>(rows * c.heads * c.head_dim), 25);
    const Matrix qkv_m = to_matrix(qkv, rows, width);
    trainsim::cpu::AttentionCache cache;
    want_out = trainsim::cpu::causal_attention(qkv_m, c.batch, c.seq, c.heads, c.head_dim, cache, c.kv_heads);
    want_dqkv = trainsim::cpu::causal_attention_backward(to_matrix(dout, rows, c.heads * c.head_dim), qkv_m, c.batch, c.seq,
                                                         c.heads, c.head_dim, cache, c.kv_heads);
    want_probs = cache.probabilities;
  }
  trainsim::cuda::AttentionShape shape() const { return {c.batch, c.seq, c.heads, c.kv_heads, c.head_dim}; }
};

std::string describe(const AttentionCase& c) {
  return "batch " + std::to_string(c.batch) + ", seq " + std::to_string(c.seq) + ", heads " + std::to_string(c.heads) +
         ", kv_heads " + std::to_string(c.kv_heads) + ", head_dim " + std::to_string(c.head_dim);
}

}  // namespace

TEST_CASE("CUDA flash attention matches the CPU causal attention, forward, lse and backward, MHA and GQA",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const AttentionCase& c : kAttentionCases) {
    INFO(describe(c));
    const AttentionData data(c);
    const auto shape = data.shape();
    const size_t rows = static_cast<size_t>(c.batch * c.seq);
    DeviceArray<bf16> qkv(to_bf16(data.qkv)), dout(to_bf16(data.dout)), out(rows * static_cast<size_t>(c.heads * c.head_dim));
    DeviceArray<bf16> dqkv(data.qkv.size());
    DeviceArray<float> lse(static_cast<size_t>(c.batch * c.heads * c.seq));
    DeviceArray<unsigned char> scratch(trainsim::cuda::flash_attention_backward_scratch_bytes(shape));
    trainsim::cuda::flash_attention_forward(qkv.get(), out.get(), lse.get(), shape, nullptr);
    trainsim::cuda::flash_attention_backward(dout.get(), qkv.get(), out.get(), lse.get(), dqkv.get(), scratch.get(), shape,
                                             nullptr);
    CHECK(relative_error(download_float(out), data.want_out) < kBf16Tolerance);
    CHECK(relative_error(download_float(dqkv), data.want_dqkv) < kAttentionBackwardTolerance);
    // lse of row i: log sum_j exp(scale q_i . k_j), from the CPU's probabilities: p_i0 = exp(s_i0 - lse_i).
    const auto got_lse = lse.download();
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    std::vector<float> want_lse(got_lse.size());
    const Matrix qkv_m = to_matrix(data.qkv, static_cast<int64_t>(rows), (c.heads + 2 * c.kv_heads) * c.head_dim);
    for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
      const int64_t b = bh / c.heads, h = bh % c.heads, kv = h / (c.heads / c.kv_heads);
      for (int64_t i = 0; i < c.seq; ++i) {  // s_i0 = scale q_i . k_0
        const double s0 = scale * qkv_m.row(b * c.seq + i).segment(h * c.head_dim, c.head_dim).dot(
                                      qkv_m.row(b * c.seq).segment((c.heads + kv) * c.head_dim, c.head_dim));
        want_lse[static_cast<size_t>(bh * c.seq + i)] =
            static_cast<float>(s0 - std::log(static_cast<double>(data.want_probs[static_cast<size_t>(bh)](i, 0))));
      }
    }
    CHECK(relative_error(got_lse, want_lse) < 1e-3);  // fp32 softmax statistics from exact inputs
  }
}

TEST_CASE("CUDA unfused attention matches the CPU causal attention, probabilities included, MHA and GQA",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  cublasHandle_t blas = nullptr;
  TRAINSIM_CUBLAS_CHECK(cublasCreate(&blas));
  for (const AttentionCase& c : kAttentionCases) {
    INFO(describe(c));
    const AttentionData data(c);
    const auto shape = data.shape();
    const size_t rows = static_cast<size_t>(c.batch * c.seq);
    DeviceArray<bf16> qkv(to_bf16(data.qkv)), dout(to_bf16(data.dout)), out(rows * static_cast<size_t>(c.heads * c.head_dim));
    DeviceArray<bf16> dqkv(data.qkv.size()), probs(static_cast<size_t>(c.batch * c.heads * c.seq * c.seq));
    DeviceArray<unsigned char> scratch(trainsim::cuda::unfused_attention_scratch_bytes(shape));
    trainsim::cuda::unfused_attention_forward(blas, qkv.get(), out.get(), probs.get(), scratch.get(), shape, nullptr);
    trainsim::cuda::unfused_attention_backward(blas, dout.get(), qkv.get(), probs.get(), dqkv.get(), scratch.get(), shape,
                                               nullptr);
    CHECK(relative_error(download_float(out), data.want_out) < kBf16Tolerance);
    CHECK(relative_error(download_float(dqkv), data.want_dqkv) < kAttentionBackwardTolerance);
    std::vector<float> want_probs;
    for (const Matrix& p : data.want_probs) want_probs.insert(want_probs.end(), p.data(), p.data() + p.size());
    CHECK(relative_error(download_float(probs), want_probs) < kBf16Tolerance);
  }
  cublasDestroy(blas);
}

#endif  // TRAINSIM_HAVE_CUDA
