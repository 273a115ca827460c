// The MoE FFN with expert parallelism, without MPI: ep ranks as threads exchanging through shared
// slots run the layer on their own tokens and must give, row for row, the output and input
// gradient one rank gives on all the tokens, and the same parameter gradients (the router's and
// the shared experts' summed over the ranks, each expert's on the rank holding it).
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/moe_layer.hpp"

using namespace trainsim::cpu;

namespace {

Matrix random_matrix(int64_t rows, int64_t cols, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// ep ranks as threads: each leaves what it sends in a slot, all wait, each takes its blocks, all wait.
class ThreadExperts final : public EpGroup {
 public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    int arrived = 0;
    int64_t generation = 0;
    std::vector<std::vector<int64_t>> counts, send_rows;
    std::vector<Matrix> rows;
  };
  ThreadExperts(Shared& shared, int size, int rank) : shared_(shared), size_(size), rank_(rank) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<int64_t> all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) override {
    shared_.counts[static_cast<size_t>(rank_)] = send;
    wait_for_all();
    std::vector<int64_t> received;
    for (int s = 0; s < size_; ++s) {
      const auto& from = shared_.counts[static_cast<size_t>(s)];
      received.insert(received.end(), from.begin() + rank_ * per_rank, from.begin() + (rank_ + 1) * per_rank);
    }
    wait_for_all();
    return received;
  }
  Matrix all_to_all_rows(const Matrix& rows, const std::vector<int64_t>& send_rows, const std::vector<int64_t>& recv_rows) override {
    shared_.rows[static_cast<size_t>(rank_)] = rows;
    shared_.send_rows[static_cast<size_t>(rank_)] = send_rows;
    wait_for_all();
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
    wait_for_all();
    return out;
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

Param param(const std::string& name, Matrix value) {
  Param p;
  p.name = name;
  p.grad = Matrix::Zero(value.rows(), value.cols());
  p.value = std::move(value);
  return p;
}

// Every tensor of a layer with `experts` experts (biases, one shared expert); a rank views its own.
struct LayerTensors {
  std::vector<Param> all;  // router, then w_1, b_1, w_2, b_2 of each expert, then of the shared expert
  LayerTensors(int64_t h, int64_t experts, int64_t f, int64_t gates) {
    all.push_back(param("router", random_matrix(h, experts, 1)));
    for (int64_t e = 0; e <= experts; ++e) {  // e == experts: the shared expert
      const unsigned seed = static_cast<unsigned>(10 * e + 2);
      all.push_back(param("w_1", random_matrix(h, gates * f, seed, 0.5f)));
      all.push_back(param("b_1", random_matrix(1, gates * f, seed + 1, 0.1f)));
      all.push_back(param("w_2", random_matrix(f, h, seed + 2, 0.5f)));
      all.push_back(param("b_2", random_matrix(1, h, seed + 3, 0.1f)));
    }
  }
  FfnParams ffn(int64_t e) { return FfnParams{&all[1 + 4 * e], &all[2 + 4 * e], &all[3 + 4 * e], &all[4 + 4 * e]}; }
  MoeParams view(int64_t first, int64_t count, int64_t experts) {
    MoeParams p;
    p.router = &all[0];
    for (int64_t e = first; e < first + count; ++e) p.experts.push_back(ffn(e));
    p.shared = ffn(experts);
    return p;
  }
};

// max |a - b| / max |b|
double relative_difference(const Matrix& a, const Matrix& b) {
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) / std::max(1e-30, static_cast<double>(b.cwiseAbs().maxCoeff()));
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
      SingleRankExperts alone;
      MoeCache cache;
      const Matrix y = moe_forward(x, whole.view(0, experts, experts), shape, alone, cache);
      const Matrix dx = moe_backward(dy, x, whole.view(0, experts, experts), shape, alone, cache);

      ThreadExperts::Shared shared;
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
          MoeCache c;
          const MoeParams p = ranks[static_cast<size_t>(r)].view(r * local, local, experts);
          const Matrix xr = x.middleRows(r * tokens, tokens);
          ys[static_cast<size_t>(r)] = moe_forward(xr, p, shape, group, c);
          dxs[static_cast<size_t>(r)] = moe_backward(dy.middleRows(r * tokens, tokens), xr, p, shape, group, c);
        });
      }
      for (std::thread& t : threads) t.join();
      double largest = 0;
      for (int r = 0; r < ep; ++r) {
        largest = std::max(largest, relative_difference(ys[static_cast<size_t>(r)], y.middleRows(r * tokens, tokens)));
        largest = std::max(largest, relative_difference(dxs[static_cast<size_t>(r)], dx.middleRows(r * tokens, tokens)));
      }
      for (size_t i = 0; i < whole.all.size(); ++i) {
        const int64_t e = i == 0 ? -1 : static_cast<int64_t>((i - 1) / 4);  // -1: router; experts: the shared one
        Matrix grad = Matrix::Zero(whole.all[i].grad.rows(), whole.all[i].grad.cols());
        for (int r = 0; r < ep; ++r) {
          if (e < 0 || e == experts || e / local == r) grad += ranks[static_cast<size_t>(r)].all[i].grad;
        }
        largest = std::max(largest, relative_difference(grad, whole.all[i].grad));
      }
      CHECK(largest < 5e-6);  // measured 3e-7 to 5e-7 (fp32, other summation orders)
    }
  }
}
