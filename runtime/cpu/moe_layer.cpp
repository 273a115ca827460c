// The MoE FFN's forward and backward; see moe_layer.hpp. Shapes: T tokens of this rank, k = top_k,
// C = T x k copies, R rows received for the local experts, h hidden. Timed as the simulator's
// categories: router GEMMs and top-k as moe_router, (un)permuting copies as moe_permute, expert
// and shared-expert GEMMs as gemm_fc1 / gemm_fc2, their activation as activation (the all-to-alls
// are timed by the EP group, as ep_comm; the expert-TP all-reduce by the TP group, as tp_comm).
#include "runtime/cpu/moe_layer.hpp"

#include "common/errors.hpp"
#include "kernels/cpu/op_clock.hpp"

namespace trainsim::cpu {

namespace {

using C = OpCategory;

Matrix linear(const Matrix& x, const runtime::Param& w, const runtime::Param* b) {
  Matrix y = x * w.value;
  if (b != nullptr) y.rowwise() += b->value.row(0);
  return y;
}

// Rows `rows[i]` of `from`, in that order.
Matrix gather_rows(const Matrix& from, const std::vector<int64_t>& rows, size_t first, int64_t count) {
  Matrix out(count, from.cols());
  for (int64_t i = 0; i < count; ++i) out.row(i) = from.row(rows[first + static_cast<size_t>(i)]);
  return out;
}

// Runs each local expert on its received rows; returns its outputs (or, backward, its input
// gradients) at the rows they came in, ready to go back over the all-to-all.
template <typename Run>
Matrix run_local_experts(const Matrix& received, const runtime::ExpertBatches& b, Run&& run) {
  Matrix out(received.rows(), received.cols());
  size_t first = 0;
  for (size_t j = 0; j < b.expert_rows.size(); ++j) {
    const int64_t n = b.expert_rows[j];
    const Matrix in = timed_op(C::kMoePermute, [&] { return gather_rows(received, b.row, first, n); });
    const Matrix result = run(j, in);
    timed_op(C::kMoePermute, [&] {
      for (int64_t i = 0; i < n; ++i) out.row(b.row[first + static_cast<size_t>(i)]) = result.row(i);
    });
    first += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace

// GELU, or SwiGLU on [gate | up].
Matrix ffn_forward(const Matrix& x, const FfnParams& p, bool swiglu, bool output_bias, FfnCache& c) {
  c.fc1 = timed_op(C::kGemmFc1, [&] { return linear(x, *p.w_1, p.b_1); });
  c.act = timed_op(C::kActivation, [&] { return swiglu ? cpu::swiglu(c.fc1) : gelu(c.fc1); });
  return timed_op(C::kGemmFc2, [&] { return linear(c.act, *p.w_2, output_bias ? p.b_2 : nullptr); });
}

Matrix ffn_backward(const Matrix& dout, const Matrix& x, const FfnParams& p, bool swiglu, const FfnCache& c) {
  const Matrix dact = timed_op(C::kGemmFc2, [&] {
    p.w_2->grad.noalias() += c.act.transpose() * dout;
    return Matrix(dout * p.w_2->value.transpose());
  });
  if (p.b_2 != nullptr) add_column_sums(dout, p.b_2->grad);
  const Matrix dfc1 = timed_op(C::kActivation, [&] { return swiglu ? swiglu_backward(dact, c.fc1) : gelu_backward(dact, c.fc1); });
  if (p.b_1 != nullptr) add_column_sums(dfc1, p.b_1->grad);
  return timed_op(C::kGemmFc1, [&] {
    p.w_1->grad.noalias() += x.transpose() * dfc1;
    return Matrix(dfc1 * p.w_1->value.transpose());
  });
}

Matrix moe_forward(const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, TpGroup& expert_tp, MoeCache& c) {
  if (shape.allgather && ep.size() > 1) return moe_forward_allgather(x, p, shape, ep, c);
  const int64_t k = shape.top_k, local = shape.experts / ep.size();
  TRAINSIM_ASSERT(static_cast<int64_t>(p.experts.size()) == local, "each EP rank holds experts / ep experts");
  TRAINSIM_ASSERT(ep.size() == 1 || expert_tp.size() == 1, "expert TP 1 with expert parallelism (plan/moe_lowering.cpp)");
  const bool output_bias = expert_tp.rank() == 0;  // each expert's b2 enters the partial sums once
  {
    const ScopedOpTimer timer(C::kMoeRouter);
    c.routing = runtime::route_top_k(x * p.router->value, k);
  }
  const Matrix permuted = timed_op(C::kMoePermute, [&] {
    c.layout = runtime::dispatch_layout(c.routing, shape.experts, ep.size());
    Matrix rows(static_cast<int64_t>(c.layout.slot.size()), x.cols());
    for (size_t i = 0; i < c.layout.slot.size(); ++i) rows.row(static_cast<int64_t>(i)) = x.row(c.layout.slot[i] / k);
    return rows;
  });
  // Experts ascend with the rank holding them, so expert_rows is already in blocks by destination.
  c.batches = runtime::expert_batches(ep.all_to_all_counts(c.layout.expert_rows, local), ep.size(), local);
  const Matrix received = ep.all_to_all_rows(permuted, c.layout.rank_rows, c.batches.source_rows);
  c.experts.assign(static_cast<size_t>(local), FfnCache());
  const Matrix processed = run_local_experts(received, c.batches, [&](size_t j, const Matrix& in) {
    c.experts[j].in = in;
    return ffn_forward(in, p.experts[j], shape.swiglu, output_bias, c.experts[j]);
  });
  const Matrix combined = ep.all_to_all_rows(processed, c.batches.source_rows, c.layout.rank_rows);
  return timed_op(C::kMoePermute, [&] {
    c.copy_out.resize(combined.rows(), combined.cols());
    for (size_t i = 0; i < c.layout.slot.size(); ++i) c.copy_out.row(c.layout.slot[i]) = combined.row(static_cast<int64_t>(i));
    Matrix sum = Matrix::Zero(x.rows(), x.cols());
    for (int64_t t = 0; t < x.rows(); ++t) {
      for (int64_t j = 0; j < k; ++j) sum.row(t) += c.routing.weight(t, j) * c.copy_out.row(t * k + j);
    }
    return sum;
  });
}

Matrix moe_backward(const Matrix& dy, const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, TpGroup& expert_tp,
                    const MoeCache& c) {
  if (shape.allgather && ep.size() > 1) return moe_backward_allgather(dy, x, p, shape, ep, c);
  const int64_t k = shape.top_k;
  // y_t = sum_j w_tj out_tj: d out_tj = w_tj dy_t, d w_tj = dy_t . out_tj.
  Matrix dweight(x.rows(), k);
  const Matrix dpermuted = timed_op(C::kMoePermute, [&] {
    Matrix rows(static_cast<int64_t>(c.layout.slot.size()), x.cols());
    for (size_t i = 0; i < c.layout.slot.size(); ++i) {
      const int64_t slot = c.layout.slot[i], t = slot / k, j = slot % k;
      rows.row(static_cast<int64_t>(i)) = c.routing.weight(t, j) * dy.row(t);
      dweight(t, j) = dy.row(t).dot(c.copy_out.row(slot));
    }
    return rows;
  });
  // With expert TP each copy's output here is this rank's slices' share: the weights' gradient is the sum.
  expert_tp.all_reduce(dweight);
  // The combine's backward sends the gradients the way the dispatch sent the copies, and back.
  const Matrix dreceived = ep.all_to_all_rows(dpermuted, c.layout.rank_rows, c.batches.source_rows);
  const Matrix dprocessed = run_local_experts(dreceived, c.batches, [&](size_t j, const Matrix& dout) {
    return ffn_backward(dout, c.experts[j].in, p.experts[j], shape.swiglu, c.experts[j]);
  });
  const Matrix dsent = ep.all_to_all_rows(dprocessed, c.batches.source_rows, c.layout.rank_rows);
  Matrix dx = timed_op(C::kMoePermute, [&] {
    Matrix sum = Matrix::Zero(x.rows(), x.cols());
    for (size_t i = 0; i < c.layout.slot.size(); ++i) sum.row(c.layout.slot[i] / k) += dsent.row(static_cast<int64_t>(i));
    return sum;
  });
  {
    const ScopedOpTimer timer(C::kMoeRouter);
    const Matrix dlogits = runtime::route_top_k_backward(c.routing, dweight, shape.experts);
    p.router->grad.noalias() += x.transpose() * dlogits;
    if (expert_tp.rank() == 0) dx.noalias() += dlogits * p.router->value.transpose();  // replicated: enters the partial sums once
  }
  return dx;
}

}  // namespace trainsim::cpu
