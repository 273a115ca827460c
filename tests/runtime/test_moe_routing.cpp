// MoE routing by hand: the router's top-k choice and weights on logits small enough to work out,
// the weights' backward against finite differences, and where the copies go (the permutation, the
// counts per expert and per EP rank, and what each rank receives after the counts all-to-all).
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/moe_routing.hpp"

using namespace trainsim::cpu;
using namespace trainsim::runtime;

TEST_CASE("top-2 routing picks the two largest logits and weighs them by a softmax over those two") {
  Matrix logits(3, 4);
  logits << 0.0f, 2.0f, 1.0f, -1.0f,  // experts 1 then 2
      3.0f, 3.0f, 0.0f, 3.0f,         // a three-way tie: the lower ids first (0, 1)
      -2.0f, -1.0f, -3.0f, 0.5f;      // experts 3 then 1
  const Routing r = route_top_k(logits, 2);
  CHECK(r.expert == std::vector<int32_t>{1, 2, 0, 1, 3, 1});
  // softmax over (2, 1): e^1 / (e^1 + 1) and 1 / (e^1 + 1).
  const double e = std::exp(1.0);
  CHECK(r.weight(0, 0) == Approx(e / (e + 1)).epsilon(1e-6));
  CHECK(r.weight(0, 1) == Approx(1 / (e + 1)).epsilon(1e-6));
  CHECK(r.weight(1, 0) == Approx(0.5).epsilon(1e-6));
  CHECK(r.weight(1, 1) == Approx(0.5).epsilon(1e-6));
  // (0.5, -1): the same as a softmax over all four renormalised over the chosen two (Qwen3's norm_topk_prob).
  double all = 0;
  for (int i = 0; i < 4; ++i) all += std::exp(static_cast<double>(logits(2, i)));
  const double p3 = std::exp(0.5) / all, p1 = std::exp(-1.0) / all;
  CHECK(r.weight(2, 0) == Approx(p3 / (p3 + p1)).epsilon(1e-6));
  CHECK(r.weight(2, 1) == Approx(p1 / (p3 + p1)).epsilon(1e-6));
}

TEST_CASE("the routing weights' backward matches finite differences of the weights in the logits") {
  Matrix logits(2, 5);
  logits << 0.3f, -0.2f, 1.1f, 0.7f, -1.0f, 2.0f, 0.1f, -0.4f, 1.5f, 0.9f;
  Matrix dweight(2, 3);  // an arbitrary upstream gradient: loss = sum dweight * weight
  dweight << 0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f;
  const Routing r = route_top_k(logits, 3);
  const Matrix analytic = route_top_k_backward(r, dweight, 5);
  const auto loss = [&](const Matrix& l) {
    const Routing p = route_top_k(l, 3);
    double sum = 0;
    for (int t = 0; t < 2; ++t) {
      for (int j = 0; j < 3; ++j) sum += static_cast<double>(dweight(t, j)) * p.weight(t, j);
    }
    return sum;
  };
  for (int t = 0; t < 2; ++t) {
    for (int e = 0; e < 5; ++e) {
      Matrix up = logits, down = logits;
      up(t, e) += 5e-3f;
      down(t, e) -= 5e-3f;
      INFO("token " << t << " expert " << e);
      CHECK(analytic(t, e) == Approx((loss(up) - loss(down)) / 1e-2).margin(3e-4).epsilon(1e-3));
    }
  }
  CHECK(analytic(0, 4) == 0.0f);  // expert 4 is not among token 0's top 3: no gradient
}

TEST_CASE("the dispatch groups the copies by expert and counts them per expert and per EP rank") {
  Routing r;
  r.top_k = 2;
  r.expert = {3, 0, 1, 3, 0, 2};  // token 0 -> 3, 0; token 1 -> 1, 3; token 2 -> 0, 2
  r.weight = Matrix::Constant(3, 2, 0.5f);
  const DispatchLayout d = dispatch_layout(r, 4, 2);  // experts 0, 1 on EP rank 0; 2, 3 on rank 1
  CHECK(d.expert_rows == std::vector<int64_t>{2, 1, 1, 2});
  CHECK(d.rank_rows == std::vector<int64_t>{3, 3});
  // Slots (t*k + j) by expert: 0 <- slots 1, 4; 1 <- 2; 2 <- 5; 3 <- 0, 3.
  CHECK(d.slot == std::vector<int64_t>{1, 4, 2, 5, 0, 3});
}

TEST_CASE("after the counts all-to-all each local expert's rows are found in the received buffer") {
  // EP 2, two local experts; this rank receives from rank 0: 2 rows for expert 0, 1 for expert 1;
  // from rank 1: 0 for expert 0, 3 for expert 1. Received rows: [0 1 | 2] from 0, [3 4 5] from 1.
  const ExpertBatches b = expert_batches({2, 1, 0, 3}, 2, 2);
  CHECK(b.source_rows == std::vector<int64_t>{3, 3});
  CHECK(b.expert_rows == std::vector<int64_t>{2, 4});
  CHECK(b.row == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  // From rank 0: 1 row for expert 0, 2 for expert 1; from rank 1: 2 for expert 0, 0 for expert 1.
  // Received: [0 | 1 2] from 0, [3 4 |] from 1: expert 0 takes 0, 3, 4; expert 1 takes 1, 2.
  const ExpertBatches c = expert_batches({1, 2, 2, 0}, 2, 2);
  CHECK(c.expert_rows == std::vector<int64_t>{3, 2});
  CHECK(c.row == std::vector<int64_t>{0, 3, 4, 1, 2});
}
