// Context parallelism's pieces without MPI: the load-balanced chunks, the log-sum-exp merge of
// partial attention against full attention on random data, and the whole ring (forward and
// backward, MHA and GQA) on cp threads against causal attention over the whole sequence.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "kernels/cpu/attention_blocks.hpp"
#include "runtime/cpu/ring_attention.hpp"

using namespace trainsim::cpu;
using namespace trainsim::runtime;

namespace {

Matrix random_matrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// cp ranks as threads: ring_shift leaves each block in a slot, waits for all, takes the previous
// rank's, waits again.
class ThreadRing final : public CpGroup {
 public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    int arrived = 0;
    int64_t generation = 0;
    std::vector<Matrix> slots;
  };
  ThreadRing(Shared& shared, int size, int rank) : shared_(shared), size_(size), rank_(rank) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  Matrix ring_shift(const Matrix& block) override {
    shared_.slots[static_cast<size_t>(rank_)] = block;
    wait_for_all();
    Matrix received = shared_.slots[static_cast<size_t>((rank_ + size_ - 1) % size_)];
    wait_for_all();
    return received;
  }

 private:
  void wait_for_all() {
    std::unique_lock<std::mutex> lock(shared_.mutex);
    const int64_t generation = shared_.generation;
    if (++shared_.arrived == size_) {
      shared_.arrived = 0;
      ++shared_.generation;
      shared_.changed.notify_all();
    } else {
      shared_.changed.wait(lock, [&] { return shared_.generation != generation; });
    }
  }
  Shared& shared_;
  int size_, rank_;
};

// The rows of `full` (batch sequences of seq rows) that CP rank `rank` holds, in its order.
Matrix rows_of_rank(const Matrix& full, int64_t batch, int64_t seq, int64_t cp, int64_t rank) {
  const std::vector<int32_t> positions = context_positions(seq, cp, rank);
  const int64_t local = static_cast<int64_t>(positions.size());
  Matrix out(batch * local, full.cols());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < local; ++i) out.row(b * local + i) = full.row(b * seq + positions[static_cast<size_t>(i)]);
  }
  return out;
}

}  // namespace

TEST_CASE("each CP rank holds chunks r and 2cp-1-r: every position once, the causal work balanced") {
  for (int64_t cp = 1; cp <= 8; ++cp) {
    const int64_t seq = 2 * cp * 3;
    std::vector<int> seen(static_cast<size_t>(seq), 0);
    std::vector<int64_t> work;  // keys the rank's queries see (causal): position + 1 each
    for (int64_t r = 0; r < cp; ++r) {
      const ContextChunks chunks = context_chunks(cp, r);
      CHECK(chunks.first == r);
      CHECK(chunks.second == 2 * cp - 1 - r);
      const std::vector<int32_t> positions = context_positions(seq, cp, r);
      REQUIRE(static_cast<int64_t>(positions.size()) == seq / cp);
      CHECK(std::is_sorted(positions.begin(), positions.end()));
      int64_t keys = 0;
      for (int32_t p : positions) {
        ++seen[static_cast<size_t>(p)];
        keys += p + 1;
      }
      work.push_back(keys);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    CHECK(std::adjacent_find(work.begin(), work.end(), std::not_equal_to<>()) == work.end());
  }
  CHECK(context_positions(8, 2, 1) == std::vector<int32_t>{2, 3, 4, 5});
}

TEST_CASE("merging partial attention over key blocks by log-sum-exp equals attention over all keys") {
  const int64_t chunk = 6, d = 8;
  const Matrix q = random_matrix(3 * chunk, d, 1), k = random_matrix(3 * chunk, d, 2), v = random_matrix(3 * chunk, d, 3);
  Matrix qkv(3 * chunk, 3 * d);
  qkv << q, k, v;
  AttentionCache cache;
  const Matrix reference = causal_attention(qkv, 1, 3 * chunk, 1, d, cache);  // the last chunk's queries see every key
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const auto last = [&](const Matrix& m, int64_t c) { return m.middleRows(c * chunk, chunk); };
  for (const std::vector<int64_t>& order : {std::vector<int64_t>{0, 1, 2}, {2, 0, 1}, {1, 2, 0}}) {
    Matrix out = Matrix::Zero(chunk, d), partial(chunk, d);
    std::vector<float> lse(chunk, -std::numeric_limits<float>::infinity()), partial_lse(chunk);
    for (int64_t c : order) {
      attention_block(last(q, 2), last(k, c), last(v, c), scale, c == 2 ? BlockMask::kCausal : BlockMask::kFull, partial, partial_lse.data());
      merge_attention_block(out, lse.data(), partial, partial_lse.data());
    }
    CHECK((out - reference.bottomRows(chunk)).cwiseAbs().maxCoeff() < 1e-5f);
    for (int64_t i = 0; i < chunk; ++i) {  // lse against a direct log-sum-exp in double
      double sum = 0;
      for (int64_t j = 0; j <= 2 * chunk + i; ++j) sum += std::exp(scale * static_cast<double>(q.row(2 * chunk + i).dot(k.row(j))));
      CHECK(lse[static_cast<size_t>(i)] == Approx(std::log(sum)).epsilon(1e-5));
    }
  }
}

TEST_CASE("ring attention on cp ranks equals causal attention over the whole sequence, forward and backward") {
  const int64_t batch = 2, heads = 4, d = 8;
  for (int64_t kv_heads : {4, 2}) {
    for (int cp : {1, 2, 3}) {
      const int64_t seq = 2 * cp * 3, width = (heads + 2 * kv_heads) * d;
      const Matrix qkv = random_matrix(batch * seq, width, 11), dout = random_matrix(batch * seq, heads * d, 12);
      AttentionCache cache;
      const Matrix out = causal_attention(qkv, batch, seq, heads, d, cache, kv_heads);
      const Matrix dqkv = causal_attention_backward(dout, qkv, batch, seq, heads, d, cache, kv_heads);
      ThreadRing::Shared shared;
      shared.slots.resize(static_cast<size_t>(cp));
      std::vector<Matrix> outs(static_cast<size_t>(cp)), grads(static_cast<size_t>(cp));
      std::vector<std::thread> ranks;
      for (int r = 0; r < cp; ++r) {
        ranks.emplace_back([&, r] {
          ThreadRing ring(shared, cp, r);
          RingAttentionCache ring_cache;
          const Matrix local = rows_of_rank(qkv, batch, seq, cp, r);
          const RingShape shape{batch, heads, kv_heads, d};
          outs[static_cast<size_t>(r)] = ring_attention(local, shape, ring, ring_cache);
          grads[static_cast<size_t>(r)] = ring_attention_backward(rows_of_rank(dout, batch, seq, cp, r), local,
                                                                  outs[static_cast<size_t>(r)], shape, ring, ring_cache);
        });
      }
      for (std::thread& t : ranks) t.join();
      for (int r = 0; r < cp; ++r) {
        INFO("cp " << cp << " rank " << r << " kv_heads " << kv_heads);
        CHECK((outs[static_cast<size_t>(r)] - rows_of_rank(out, batch, seq, cp, r)).cwiseAbs().maxCoeff() < 1e-5f);
        CHECK((grads[static_cast<size_t>(r)] - rows_of_rank(dqkv, batch, seq, cp, r)).cwiseAbs().maxCoeff() < 1e-4f);
      }
    }
  }
}
