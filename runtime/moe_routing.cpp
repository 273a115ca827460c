// Top-k routing, its backward and the dispatch permutation; see moe_routing.hpp.
#include "runtime/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/errors.hpp"

namespace trainsim::runtime {

Routing route_top_k(const Matrix& logits, int64_t top_k) {
  const int64_t tokens = logits.rows(), experts = logits.cols();
  TRAINSIM_ASSERT(top_k >= 1 && top_k <= experts, "validate_model keeps 1 <= top_k <= experts");
  Routing r;
  r.top_k = top_k;
  r.expert.resize(static_cast<size_t>(tokens * top_k));
  r.weight.resize(tokens, top_k);
  std::vector<int32_t> ids(static_cast<size_t>(experts));
  for (int64_t t = 0; t < tokens; ++t) {
    std::iota(ids.begin(), ids.end(), 0);
    const auto higher = [&](int32_t a, int32_t b) { return logits(t, a) > logits(t, b) || (logits(t, a) == logits(t, b) && a < b); };
    std::partial_sort(ids.begin(), ids.begin() + top_k, ids.end(), higher);
    const float top = logits(t, ids[0]);  // the largest: exp(l - top) <= 1
    float sum = 0;
    for (int64_t j = 0; j < top_k; ++j) {
      r.expert[static_cast<size_t>(t * top_k + j)] = ids[static_cast<size_t>(j)];
      r.weight(t, j) = std::exp(logits(t, ids[static_cast<size_t>(j)]) - top);
      sum += r.weight(t, j);
    }
    r.weight.row(t) /= sum;
  }
  return r;
}

Matrix route_top_k_backward(const Routing& r, const Matrix& dweight, int64_t experts) {
  const int64_t tokens = r.weight.rows(), k = r.top_k;
  Matrix dlogits = Matrix::Zero(tokens, experts);
  for (int64_t t = 0; t < tokens; ++t) {
    const float dot = r.weight.row(t).dot(dweight.row(t));
    for (int64_t j = 0; j < k; ++j) {
      dlogits(t, r.expert[static_cast<size_t>(t * k + j)]) += r.weight(t, j) * (dweight(t, j) - dot);
    }
  }
  return dlogits;
}

DispatchLayout dispatch_layout(const Routing& r, int64_t experts, int64_t ep) {
  TRAINSIM_ASSERT(experts % ep == 0, "check_expert_parallel keeps ep | experts");
  DispatchLayout d;
  d.expert_rows.assign(static_cast<size_t>(experts), 0);
  for (int32_t e : r.expert) ++d.expert_rows[static_cast<size_t>(e)];
  // A counting sort by expert, stable in slot order (so tokens stay in order within an expert).
  std::vector<int64_t> next(static_cast<size_t>(experts), 0);
  for (int64_t e = 1; e < experts; ++e) next[static_cast<size_t>(e)] = next[static_cast<size_t>(e - 1)] + d.expert_rows[static_cast<size_t>(e - 1)];
  d.slot.resize(r.expert.size());
  for (size_t s = 0; s < r.expert.size(); ++s) d.slot[static_cast<size_t>(next[static_cast<size_t>(r.expert[s])]++)] = static_cast<int64_t>(s);
  const int64_t local = experts / ep;
  d.rank_rows.assign(static_cast<size_t>(ep), 0);
  for (int64_t e = 0; e < experts; ++e) d.rank_rows[static_cast<size_t>(e / local)] += d.expert_rows[static_cast<size_t>(e)];
  return d;
}

ExpertBatches expert_batches(const std::vector<int64_t>& received, int64_t ep, int64_t local) {
  TRAINSIM_ASSERT(static_cast<int64_t>(received.size()) == ep * local, "one count per (source rank, local expert)");
  ExpertBatches b;
  b.source_rows.assign(static_cast<size_t>(ep), 0);
  b.expert_rows.assign(static_cast<size_t>(local), 0);
  // start[s * local + j]: the received row where source s's rows for expert j begin.
  std::vector<int64_t> start(received.size(), 0);
  int64_t at = 0;
  for (size_t i = 0; i < received.size(); ++i) {
    start[i] = at;
    at += received[i];
    b.source_rows[i / static_cast<size_t>(local)] += received[i];
    b.expert_rows[i % static_cast<size_t>(local)] += received[i];
  }
  b.row.reserve(static_cast<size_t>(at));
  for (int64_t j = 0; j < local; ++j) {
    for (int64_t s = 0; s < ep; ++s) {
      const size_t i = static_cast<size_t>(s * local + j);
      for (int64_t n = 0; n < received[i]; ++n) b.row.push_back(start[i] + n);
    }
  }
  return b;
}

}  // namespace trainsim::runtime
