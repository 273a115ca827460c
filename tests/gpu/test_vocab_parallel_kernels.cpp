// The vocabulary-parallel kernels (kernels/cuda/vocab_parallel.cuh) without NCCL: the tp
// ranks of a TP group simulated one after another on one GPU, each holding its vocabulary shard,
// the reductions between the steps (max, sum over ranks) done on the host as TpCollectives does
// them on the device. Against the CPU runtime's shard functions (kernels/cpu/cpu_kernels.hpp row_max,
// shard_softmax_stats, shard_cross_entropy_grad), the whole-row cross-entropy, and loops that
// mirror cpu_model.cpp's embed / embed_backward. Bounds as test_cuda_kernels.cpp. Without a visible
// GPU every test warns "no GPU: skipped" and passes.
#ifdef TRAINSIM_HAVE_CUDA

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/vocab_parallel.cuh"
#include "runtime/context_chunks.hpp"
#include "runtime/cpu/ring_attention.hpp"
#include "tests/gpu/device_test_support.hpp"

using namespace trainsim::gpu_test;
namespace cpu = trainsim::cpu;
namespace runtime = trainsim::runtime;
namespace cuda = trainsim::cuda;

namespace {

// Rows [first, first + count) of a row-major (rows, cols) array.
std::vector<float> row_block(const std::vector<float>& v, int64_t cols, int64_t first, int64_t count) {
  return std::vector<float>(v.begin() + first * cols, v.begin() + (first + count) * cols);
}

// One tp configuration of the cross-entropy: rank k holds columns [k * count, (k + 1) * count).
void check_vocab_parallel_loss(int64_t tp, int64_t vocab) {
  const int64_t rows = 9, count = vocab / tp;
  const float scale = 1.0f / 64;
  const std::vector<float> logits = random_values(static_cast<size_t>(rows * vocab), 61, -4.0f, 4.0f);
  std::vector<int32_t> targets(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) targets[static_cast<size_t>(r)] = static_cast<int32_t>(r * vocab / rows + r % 3);  // every shard
  const Matrix all = to_matrix(logits, rows, vocab);
  DeviceArray<int32_t> td(targets);
  std::vector<Device<bf16>> ld;
  std::vector<Device<float>> max_d, stats_d;
  std::vector<Matrix> shard, shard_exp(static_cast<size_t>(tp)), want_stats;
  Matrix max = Matrix::Constant(rows, 1, -std::numeric_limits<float>::infinity());
  for (int64_t k = 0; k < tp; ++k) {  // step 1: each rank's row max, then the max over ranks
    shard.push_back(all.middleCols(k * count, count));
    ld.push_back(std::make_unique<DeviceArray<bf16>>(to_bf16(flat(shard.back()))));
    max_d.push_back(std::make_unique<DeviceArray<float>>(static_cast<size_t>(rows)));
    cuda::vocab_row_max(ld.back()->get(), max_d.back()->get(), rows, count, nullptr);
    const Matrix got = to_matrix(max_d.back()->download(), rows, 1);
    CHECK(flat(got) == flat(cpu::row_max(shard.back())));  // exact: a max of bf16 values
    max = max.cwiseMax(got);
  }
  DeviceArray<float> max_all(flat(max));
  Matrix stats_sum = Matrix::Zero(rows, 2), want_sum = Matrix::Zero(rows, 2);
  for (int64_t k = 0; k < tp; ++k) {  // step 2: sum of exp and the target logit, summed over ranks
    const cuda::VocabShard vs{k * count, count, vocab};
    stats_d.push_back(std::make_unique<DeviceArray<float>>(static_cast<size_t>(2 * rows)));
    cuda::vocab_softmax_stats(ld[static_cast<size_t>(k)]->get(), td.get(), max_all.get(), stats_d.back()->get(), vs, rows, nullptr);
    Matrix& e = shard_exp[static_cast<size_t>(k)];
    want_stats.push_back(cpu::shard_softmax_stats(shard[static_cast<size_t>(k)], max, targets, vs.first, e));
    const std::vector<float> got = stats_d.back()->download();
    CHECK(relative_error(got, want_stats.back()) < kFp32Tolerance);
    stats_sum += to_matrix(got, rows, 2);
    want_sum += want_stats.back();
  }
  DeviceArray<float> stats_all(flat(stats_sum));
  Matrix want_whole;
  const double whole_loss = cpu::cross_entropy(all, targets, scale, want_whole);
  for (int64_t k = 0; k < tp; ++k) {  // step 3: each rank's loss (all rows) and dlogits of its columns
    const cuda::VocabShard vs{k * count, count, vocab};
    DeviceArray<bf16> dl(static_cast<size_t>(rows * count));
    DeviceArray<float> loss(std::vector<float>{0.0f});
    cuda::vocab_cross_entropy_grad(ld[static_cast<size_t>(k)]->get(), td.get(), max_all.get(), stats_all.get(), dl.get(), loss.get(), vs,
                                   rows, scale, nullptr);
    Matrix want_dlogits;
    const double want_loss = cpu::shard_cross_entropy_grad(shard_exp[static_cast<size_t>(k)], max, want_sum, targets, vs.first, scale,
                                                           want_dlogits);
    INFO("tp " << tp << ", vocab " << vocab << ", rank " << k);
    CHECK(std::abs(loss.download()[0] - want_loss) < kFp32Tolerance * want_loss);
    CHECK(std::abs(want_loss - whole_loss) < kFp32Tolerance * whole_loss);  // the CPU's own split against its whole rows
    CHECK(relative_error(download_float(dl), want_dlogits) < kBf16Tolerance);
    CHECK(relative_error(download_float(dl), Matrix(want_whole.middleCols(k * count, count))) < kBf16Tolerance);
  }
}

}  // namespace

TEST_CASE("CUDA vocabulary-parallel cross-entropy on tp 2 and 4 simulated ranks matches the CPU's shard steps and whole-row loss",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t tp : {2, 4}) {
    for (const int64_t vocab : {1024, 1000}) check_vocab_parallel_loss(tp, vocab);  // 1000: 500- and 250-wide shards, scalar path
  }
}

TEST_CASE("CUDA vocabulary-parallel cross-entropy makes the loss NaN for a target outside the vocabulary", "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t rows = 1, count = 256;
  DeviceArray<bf16> ld(to_bf16(random_values(static_cast<size_t>(count), 62))), dl(static_cast<size_t>(count));
  DeviceArray<int32_t> td(std::vector<int32_t>{512});
  DeviceArray<float> max(std::vector<float>{1.0f}), stats(std::vector<float>{100.0f, 0.0f}), loss(std::vector<float>{0.0f});
  cuda::vocab_cross_entropy_grad(ld.get(), td.get(), max.get(), stats.get(), dl.get(), loss.get(), cuda::VocabShard{256, count, 512},
                                 rows, 1.0f, nullptr);
  CHECK(std::isnan(loss.download()[0]));
}

TEST_CASE("CUDA vocabulary-shard embedding on tp 2 and 4 simulated ranks: shard rows sum to the lookup, positions after the sum "
          "give the one-rank bits (SP rows, CP positions), gradients land in each shard's rows",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t vocab = 48, seq = 24, cp = 3, local = seq / cp, batch = 3, rows = batch * local;
  const std::vector<int32_t> positions = runtime::context_positions(seq, cp, 1);
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) tokens[static_cast<size_t>(r)] = static_cast<int32_t>(((r % 16) * 11 + 2) % vocab);  // repeats
  DeviceArray<int32_t> tok(tokens), pos(positions);
  for (const int64_t hidden : {40, 36}) {  // 36: the scalar path
    const auto wte = random_values(static_cast<size_t>(vocab * hidden), 63), wpe = random_values(static_cast<size_t>(seq * hidden), 64);
    const auto dout = random_values(static_cast<size_t>(rows * hidden), 65);
    DeviceArray<bf16> wte_d(to_bf16(wte)), wpe_d(to_bf16(wpe)), whole(static_cast<size_t>(rows * hidden)), dout_d(to_bf16(dout));
    DeviceArray<float> dwpe(std::vector<float>(wpe.size(), 0.0f));
    cuda::embedding_forward_at(tok.get(), wte_d.get(), wpe_d.get(), pos.get(), whole.get(), rows, local, hidden, nullptr);  // tp 1
    cuda::embedding_backward_at(tok.get(), dout_d.get(), nullptr, dwpe.get(), pos.get(), rows, local, hidden, nullptr);  // wpe only
    const std::vector<float> want_whole = download_float(whole);
    for (const int64_t tp : {2, 4}) {
      const int64_t count = vocab / tp, sp_rows = rows / tp;
      std::vector<float> summed(static_cast<size_t>(rows * hidden), 0.0f);
      for (int64_t k = 0; k < tp; ++k) {
        INFO("hidden " << hidden << ", tp " << tp << ", rank " << k);
        const cuda::VocabShard vs{k * count, count, vocab};
        DeviceArray<bf16> shard_wte(to_bf16(row_block(wte, hidden, k * count, count))), out(static_cast<size_t>(rows * hidden));
        DeviceArray<float> dwte(std::vector<float>(static_cast<size_t>(count * hidden), 0.0f));
        cuda::embedding_shard_forward(tok.get(), shard_wte.get(), vs, out.get(), rows, hidden, nullptr);
        cuda::embedding_shard_backward(tok.get(), dout_d.get(), dwte.get(), vs, rows, hidden, nullptr);
        std::vector<float> want(static_cast<size_t>(rows * hidden), 0.0f), want_dwte(static_cast<size_t>(count * hidden), 0.0f);
        for (int64_t r = 0; r < rows; ++r) {  // cpu_model.cpp embed / embed_backward: this rank's rows only
          const int64_t id = tokens[static_cast<size_t>(r)] - vs.first;
          if (id < 0 || id >= count) continue;
          for (int64_t c = 0; c < hidden; ++c) {
            want[static_cast<size_t>(r * hidden + c)] = wte[static_cast<size_t>((vs.first + id) * hidden + c)];
            want_dwte[static_cast<size_t>(id * hidden + c)] += dout[static_cast<size_t>(r * hidden + c)];
          }
        }
        const std::vector<float> got = download_float(out);
        CHECK(got == want);  // copies and zeros: exact
        CHECK(relative_error(dwte.download(), want_dwte) < kFp32Tolerance);
        for (size_t i = 0; i < got.size(); ++i) summed[i] += got[i];  // the TP sum: one rank's row plus zeros
      }
      for (int64_t k = 0; k < tp; ++k) {  // SP: rank k's rows of the reduce-scatter, its positions added after it
        DeviceArray<bf16> x(to_bf16(row_block(summed, hidden, k * sp_rows, sp_rows)));
        cuda::add_position_embedding(x.get(), wpe_d.get(), pos.get(), sp_rows, k * sp_rows, local, hidden, nullptr);
        CHECK(download_float(x) == row_block(want_whole, hidden, k * sp_rows, sp_rows));
      }
      DeviceArray<bf16> x(to_bf16(summed));  // without SP: every row on every rank
      cuda::add_position_embedding(x.get(), wpe_d.get(), pos.get(), rows, 0, local, hidden, nullptr);
      CHECK(download_float(x) == want_whole);
    }
    std::vector<float> want_dwpe(wpe.size(), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < hidden; ++c) {
        want_dwpe[static_cast<size_t>(positions[static_cast<size_t>(r % local)] * hidden + c)] += dout[static_cast<size_t>(r * hidden + c)];
      }
    }
    CHECK(relative_error(dwpe.download(), want_dwpe) < kFp32Tolerance);
  }
}

#endif  // TRAINSIM_HAVE_CUDA
