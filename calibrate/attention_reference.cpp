// The host reference of attention_reference.hpp, row by row: for query i, P_ij = softmax_j(scale
// q_i . k_j) over keys j <= i, O_i = sum_j P_ij v_j, dP_ij = dO_i . v_j, D_i = sum_j P_ij dP_ij,
// dS_ij = P_ij (dP_ij - D_i); then dQ_i = scale sum_j dS_ij k_j, and each chosen key j <= i gains
// dK_j += scale dS_ij q_i and dV_j += P_ij dO_i (FlashAttention-2, Dao 2023, Algorithm 2). The size
// of a dS term is taken as P_ij (|dP_ij| + |D_i|): the kernels round P, dP (unfused) and D's inputs.
#include "calibrate/attention_reference.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim {

namespace {

double dot(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += static_cast<double>(a[c]) * b[c];
  return sum;
}

std::vector<double> row_norms(const std::vector<float>& t, int64_t rows, int64_t d) {
  std::vector<double> norms(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) norms[i] = std::sqrt(dot(t.data() + i * d, t.data() + i * d, d));
  return norms;
}

// row.value += factor * vector; `size` (the term's unsigned size) joins row.term_scale, squared
// until attention_reference takes the root.
void add_term(ReferenceRow& row, double factor, const float* vector, double size) {
  for (size_t c = 0; c < row.value.size(); ++c) row.value[c] += factor * vector[c];
  row.term_scale += size * size;
}

}  // namespace

AttentionRows attention_reference(const HeadTensors& head, const std::vector<int64_t>& queries,
                                  const std::vector<int64_t>& keys) {
  const int64_t seq = head.seq, d = head.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto row = [d](const std::vector<float>& t, int64_t i) { return t.data() + i * d; };
  const std::vector<double> q_norm = row_norms(head.q, seq, d), k_norm = row_norms(head.k, seq, d);
  const std::vector<double> v_norm = row_norms(head.v, seq, d), do_norm = row_norms(head.dout, seq, d);
  const ReferenceRow zero{std::vector<double>(static_cast<size_t>(d), 0.0), 0.0};
  AttentionRows rows{std::vector<ReferenceRow>(queries.size(), zero), std::vector<ReferenceRow>(queries.size(), zero),
                     std::vector<ReferenceRow>(keys.size(), zero), std::vector<ReferenceRow>(keys.size(), zero)};
  const int64_t first_key = keys.empty() ? seq : *std::min_element(keys.begin(), keys.end());
  std::vector<double> p(static_cast<size_t>(seq)), dp(static_cast<size_t>(seq));
  for (int64_t i = 0; i < seq; ++i) {
    if (i < first_key && std::find(queries.begin(), queries.end(), i) == queries.end()) continue;
    double max = -INFINITY, sum = 0, drow = 0;
    for (int64_t j = 0; j <= i; ++j) {
      p[j] = scale * dot(row(head.q, i), row(head.k, j), d);
      max = std::max(max, p[j]);
    }
    for (int64_t j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - max);
    for (int64_t j = 0; j <= i; ++j) {
      p[j] /= sum;
      dp[j] = dot(row(head.dout, i), row(head.v, j), d);
      drow += p[j] * dp[j];
    }
    auto ds = [&](int64_t j) { return p[j] * (dp[j] - drow); };
    auto ds_size = [&](int64_t j) { return p[j] * (std::fabs(dp[j]) + std::fabs(drow)); };
    for (size_t a = 0; a < queries.size(); ++a) {
      if (queries[a] != i) continue;
      for (int64_t j = 0; j <= i; ++j) {
        add_term(rows.out[a], p[j], row(head.v, j), p[j] * v_norm[j]);
        add_term(rows.dq[a], scale * ds(j), row(head.k, j), scale * ds_size(j) * k_norm[j]);
      }
    }
    for (size_t b = 0; b < keys.size(); ++b) {
      const int64_t j = keys[b];
      if (j > i) continue;
      add_term(rows.dk[b], scale * ds(j), row(head.q, i), scale * ds_size(j) * q_norm[i]);
      add_term(rows.dv[b], p[j], row(head.dout, i), p[j] * do_norm[i]);
    }
  }
  for (std::vector<ReferenceRow>* part : {&rows.out, &rows.dq, &rows.dk, &rows.dv}) {
    for (ReferenceRow& r : *part) r.term_scale = std::sqrt(r.term_scale);
  }
  return rows;
}

double row_error(const float* got, const ReferenceRow& want) {
  double error = 0, norm = 0;
  for (size_t c = 0; c < want.value.size(); ++c) {
    const double diff = got[c] - want.value[c];
    error += diff * diff;
    norm += want.value[c] * want.value[c];
  }
  return std::sqrt(error) / (std::sqrt(norm) + want.term_scale);
}

}  // namespace trainsim
