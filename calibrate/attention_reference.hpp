// Causal attention of one head in double precision on the host: what the GPU calibrator checks the
// runtime's attention kernels against (calibrate/cuda_attention_sweep.cu). In: float copies of the
// head's Q, K, V and dO, (seq, head_dim) row-major each. Out: the forward rows O_i and backward
// rows dQ_i of chosen queries, dK_j and dV_j of chosen keys, each with the root-sum-square of the
// sizes of the terms it sums (what rounding errors scale with: a row whose terms cancel is not held
// to a relative error it cannot have). It computes only the query rows those need (the chosen
// queries, and every query from the first chosen key on), so rows near the end of a long sequence
// stay cheap. Softmax scale 1/sqrt(head_dim), as kernels/cuda/kernels.cuh.
#pragma once

#include <cstdint>
#include <vector>

namespace trainsim {

struct HeadTensors {
  int64_t seq = 0, head_dim = 0;
  std::vector<float> q, k, v, dout;  // (seq, head_dim) each
};

struct ReferenceRow {
  std::vector<double> value;  // head_dim values
  double term_scale = 0;      // sqrt(sum over the summed terms of |term|^2), terms taken unsigned
};

struct AttentionRows {  // one row per chosen query (out, dq) or key (dk, dv), in the order asked
  std::vector<ReferenceRow> out, dq, dk, dv;
};

AttentionRows attention_reference(const HeadTensors& head, const std::vector<int64_t>& queries,
                                  const std::vector<int64_t>& keys);

// ||got - want||_2 / (||want||_2 + want.term_scale) over one row (NaN when got holds one).
double row_error(const float* got, const ReferenceRow& want);

}  // namespace trainsim
