// The MoE layer's routed experts spread over ranks, without MPI: threads exchanging through shared
// slots stand in for the ranks. With expert parallelism, ep ranks run the layer on their own tokens
// and must give, row for row, the output and input gradient one rank gives on all the tokens, and
// the same parameter gradients (the router's summed over the ranks, each expert's on the rank
// holding it). With expert TP, tp ranks each holding a slice of every expert run the same tokens:
// their partial outputs and input gradients must sum to one rank's, the router's gradient must be
// one rank's on every rank, and each slice's gradient the slice of one rank's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/cpu/moe_layer.hpp"
#include "runtime/tp_split.hpp"

using namespace trainsim::cpu;
using namespace trainsim::runtime;

namespace {

Matrix random_matrix(int64_t rows, int64_t cols, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// Threads meeting at a barrier: each leaves what it sends in a slot, all wait, each takes what it
// needs, all wait again.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable changed;
  int arrived = 0, size = 1;
  int64_t generation = 0;
  void wait_for_all() {
    std::unique_lock<std::mutex> lock(mutex);
    const int64_t at = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      changed.notify_all();
    } else {
      changed.wait(lock, [&] { return generation != at; });
    }
  }
};

class ThreadExperts final : public EpGroup {
 public:
  struct Shared : Rendezvous {
    std::vector<std::vector<int64_t>> counts, send_rows;
    std::vector<Matrix> rows;
  };
  ThreadExperts(Shared& shared, int size, int rank) : shared_(shared), size_(size), rank_(rank) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<int64_t> all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) override {
    shared_.counts[static_cast<size_t>(rank_)] = send;
    shared_.wait_for_all();
    std::vector<int64_t> received;
    for (int s = 0; s < size_; ++s) {
      const auto& from = shared_.counts[static_cast<size_t>(s)];
      received.insert(received.end(), from.begin() + rank_ * per_rank, from.begin() + (rank_ + 1) * per_rank);
    }
    shared_.wait_for_all();
    return received;
  }
  Matrix all_to_all_rows(const Matrix& rows, const std::vector<int64_t>& send_rows, const std::vector<int64_t>& recv_rows) override {
    shared_.rows[static_cast<size_t>(rank_)] = rows;
    shared_.send_rows[static_cast<size_t>(rank_)] = send_rows;
    shared_.wait_for_all();
    int64_t total = 0;
    for (int64_t n : recv_rows) total += n;
    Matrix out(total, rows.cols());
    int64_t at = 0;
    for (int s = 0; s < size_; ++s) {
      const std::vector<int64_t>& sent = shared_.send_rows[static_cast<size_t>(s)];
      int64_t first = 0;
      for (int d = 0; d < rank_; ++d) first += sent[static_cast<size_t>(d)];
      const int64_t n = sent[static_cast<size_t>(rank_)];
      REQUIRE(n == recv_rows[static_cast<size_t>(s)]);
      out.middleRows(at, n) = shared_.rows[static_cast<size_t>(s)].middleRows(first, n);
      at += n;
    }
    shared_.wait_for_all();
    return out;
  }

 private:
  Shared& shared_;
  int size_, rank_;
};

// tp ranks as threads: the all-reduce the expert-TP layer calls (the row collectives are the stage's, not used here).
class ThreadTp final : public TpGroup {
 public:
  struct Shared : Rendezvous {
    std::vector<Matrix> parts;
  };
  ThreadTp(Shared& shared, int size, int rank) : shared_(shared), size_(size), rank_(rank) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_reduce(Matrix& m) override {
    shared_.parts[static_cast<size_t>(rank_)] = m;
    shared_.wait_for_all();
    for (int s = 0; s < size_; ++s) {
      if (s != rank_) m += shared_.parts[static_cast<size_t>(s)];
    }
    shared_.wait_for_all();
  }
  void all_reduce_max(Matrix&) override { FAIL("not used by the MoE layer"); }
  Matrix all_gather_rows(const Matrix& m) override {
    FAIL("not used by the MoE layer");
    return m;
  }
  Matrix reduce_scatter_rows(const Matrix& m) override {
    FAIL("not used by the MoE layer");
    return m;
  }

 private:
  Shared& shared_;
  int size_, rank_;
};

Param param(const std::string& name, Matrix value) {
  Param p;
  p.name = name;
  p.grad = Matrix::Zero(value.rows(), value.cols());
  p.value = std::move(value);
  return p;
}

// Every tensor of a layer with `experts` experts (with biases); a rank views its own.
struct LayerTensors {
  std::vector<Param> all;  // router, then w_1, b_1, w_2, b_2 of each expert
  LayerTensors() = default;
  LayerTensors(int64_t h, int64_t experts, int64_t f, int64_t gates) {
    all.push_back(param("router", random_matrix(h, experts, 1)));
    for (int64_t e = 0; e < experts; ++e) {
      const unsigned seed = static_cast<unsigned>(10 * e + 2);
      all.push_back(param("w_1", random_matrix(h, gates * f, seed, 0.5f)));
      all.push_back(param("b_1", random_matrix(1, gates * f, seed + 1, 0.1f)));
      all.push_back(param("w_2", random_matrix(f, h, seed + 2, 0.5f)));
      all.push_back(param("b_2", random_matrix(1, h, seed + 3, 0.1f)));
    }
  }
  // TP rank `rank`'s slice of every expert of `whole`, split as runtime/cpu/stage_moe.cpp splits them:
  // w_1 and b_1 by columns of each of the `gates` blocks, w_2 by rows, b_2 and the router whole.
  static LayerTensors slice(const LayerTensors& whole, int64_t gates, int64_t tp, int64_t rank) {
    LayerTensors out;
    out.all.push_back(param("router", whole.all[0].value));
    for (size_t i = 1; i < whole.all.size(); i += 4) {
      const std::vector<int64_t> blocks(static_cast<size_t>(gates), whole.all[i].value.cols() / gates);
      out.all.push_back(param("w_1", block_slice(whole.all[i].value, blocks, tp, rank)));
      out.all.push_back(param("b_1", block_slice(whole.all[i + 1].value, blocks, tp, rank)));
      out.all.push_back(param("w_2", row_slice(whole.all[i + 2].value, tp, rank)));
      out.all.push_back(param("b_2", whole.all[i + 3].value));
    }
    return out;
  }
  FfnParams ffn(int64_t e) { return FfnParams{&all[1 + 4 * e], &all[2 + 4 * e], &all[3 + 4 * e], &all[4 + 4 * e]}; }
  MoeParams view(int64_t first, int64_t count) {
    MoeParams p;
    p.router = &all[0];
    for (int64_t e = first; e < first + count; ++e) p.experts.push_back(ffn(e));
    return p;
  }
};

// max |a - b| / max |b|
double relative_difference(const Matrix& a, const Matrix& b) {
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) / std::max(1e-30, static_cast<double>(b.cwiseAbs().maxCoeff()));
}

// The layer on one rank holding every expert: the reference the split runs must match.
struct OneRank {
  Matrix y, dx;
};
OneRank one_rank(const Matrix& x, const Matrix& dy, LayerTensors& whole, const MoeShape& shape) {
  SingleRankExperts alone;
  SingleRankGroup no_tp;
  MoeCache cache;
  OneRank out;
  out.y = moe_forward(x, whole.view(0, shape.experts), shape, alone, no_tp, cache);
  out.dx = moe_backward(dy, x, whole.view(0, shape.experts), shape, alone, no_tp, cache);
  return out;
}

}  // namespace

TEST_CASE("the MoE layer on ep ranks (threads) equals one rank on all their tokens: output, input and weight gradients") {
  const int64_t h = 8, experts = 4, f = 6, tokens = 7;  // tokens per rank
  for (const bool swiglu : {false, true}) {
    for (const int ep : {2, 4}) {
      INFO("ep " << ep << (swiglu ? " SwiGLU" : " GELU"));
      const MoeShape shape{experts, 2, swiglu};
      const int64_t gates = swiglu ? 2 : 1;
      const Matrix x = random_matrix(ep * tokens, h, 5), dy = random_matrix(ep * tokens, h, 6);
      LayerTensors whole(h, experts, f, gates);
      const auto [y, dx] = one_rank(x, dy, whole, shape);

      ThreadExperts::Shared shared;
      shared.size = ep;
      shared.counts.resize(static_cast<size_t>(ep));
      shared.send_rows.resize(static_cast<size_t>(ep));
      shared.rows.resize(static_cast<size_t>(ep));
      std::vector<LayerTensors> ranks(static_cast<size_t>(ep), LayerTensors(h, experts, f, gates));
      std::vector<Matrix> ys(static_cast<size_t>(ep)), dxs(static_cast<size_t>(ep));
      std::vector<std::thread> threads;
      const int64_t local = experts / ep;
      for (int r = 0; r < ep; ++r) {
        threads.emplace_back([&, r] {
          ThreadExperts group(shared, ep, r);
          SingleRankGroup no_tp;
          MoeCache c;
          const MoeParams p = ranks[static_cast<size_t>(r)].view(r * local, local);
          const Matrix xr = x.middleRows(r * tokens, tokens);
          ys[static_cast<size_t>(r)] = moe_forward(xr, p, shape, group, no_tp, c);
          dxs[static_cast<size_t>(r)] = moe_backward(dy.middleRows(r * tokens, tokens), xr, p, shape, group, no_tp, c);
        });
      }
      for (std::thread& t : threads) t.join();
      double largest = 0;
      for (int r = 0; r < ep; ++r) {
        largest = std::max(largest, relative_difference(ys[static_cast<size_t>(r)], y.middleRows(r * tokens, tokens)));
        largest = std::max(largest, relative_difference(dxs[static_cast<size_t>(r)], dx.middleRows(r * tokens, tokens)));
      }
      for (size_t i = 0; i < whole.all.size(); ++i) {
        const int64_t e = i == 0 ? -1 : static_cast<int64_t>((i - 1) / 4);  // -1: the router
        Matrix grad = Matrix::Zero(whole.all[i].grad.rows(), whole.all[i].grad.cols());
        for (int r = 0; r < ep; ++r) {
          if (e < 0 || e / local == r) grad += ranks[static_cast<size_t>(r)].all[i].grad;
        }
        largest = std::max(largest, relative_difference(grad, whole.all[i].grad));
      }
      CHECK(largest < 5e-6);  // measured 3e-7 to 5e-7 (fp32, other summation orders)
    }
  }
}

TEST_CASE("the MoE layer with its experts split over tp ranks (threads) sums to one rank's: output, input and weight gradients") {
  const int64_t h = 8, experts = 4, f = 6, tokens = 9;
  for (const bool swiglu : {false, true}) {
    for (const int tp : {2, 3}) {
      INFO("tp " << tp << (swiglu ? " SwiGLU" : " GELU"));
      const MoeShape shape{experts, 2, swiglu};
      const int64_t gates = swiglu ? 2 : 1;
      const Matrix x = random_matrix(tokens, h, 5), dy = random_matrix(tokens, h, 6);
      LayerTensors whole(h, experts, f, gates);
      const auto [y, dx] = one_rank(x, dy, whole, shape);

      ThreadTp::Shared shared;
      shared.size = tp;
      shared.parts.resize(static_cast<size_t>(tp));
      std::vector<LayerTensors> ranks;
      for (int r = 0; r < tp; ++r) ranks.push_back(LayerTensors::slice(whole, gates, tp, r));
      std::vector<Matrix> ys(static_cast<size_t>(tp)), dxs(static_cast<size_t>(tp));
      std::vector<std::thread> threads;
      for (int r = 0; r < tp; ++r) {
        threads.emplace_back([&, r] {
          ThreadTp group(shared, tp, r);
          SingleRankExperts every_expert;
          MoeCache c;
          const MoeParams p = ranks[static_cast<size_t>(r)].view(0, experts);
          ys[static_cast<size_t>(r)] = moe_forward(x, p, shape, every_expert, group, c);
          dxs[static_cast<size_t>(r)] = moe_backward(dy, x, p, shape, every_expert, group, c);
        });
      }
      for (std::thread& t : threads) t.join();
      Matrix y_sum = Matrix::Zero(tokens, h), dx_sum = Matrix::Zero(tokens, h);
      for (int r = 0; r < tp; ++r) {
        y_sum += ys[static_cast<size_t>(r)];
        dx_sum += dxs[static_cast<size_t>(r)];
      }
      double largest = std::max(relative_difference(y_sum, y), relative_difference(dx_sum, dx));
      // The router's and every b_2's gradient whole on every rank; each slice's the slice of the whole gradient.
      const auto expected_grad = [&](size_t i, int r) -> Matrix {
        const Matrix& g = whole.all[i].grad;
        if (i == 0 || i % 4 == 0) return g;
        if (i % 4 == 3) return row_slice(g, tp, r);
        return block_slice(g, std::vector<int64_t>(static_cast<size_t>(gates), g.cols() / gates), tp, r);
      };
      for (int r = 0; r < tp; ++r) {
        for (size_t i = 0; i < whole.all.size(); ++i) {
          largest = std::max(largest, relative_difference(ranks[static_cast<size_t>(r)].all[i].grad, expected_grad(i, r)));
        }
      }
      CHECK(largest < 5e-6);
    }
  }
}
