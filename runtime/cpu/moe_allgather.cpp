// Megatron-Core's all-gather token dispatcher (MoEAllGatherTokenDispatcher) on the CPU runtime, as
// plan/moe_lowering.cpp prices it: every EP rank all-gathers the group's tokens and their routing
// (experts and weights), runs its local experts on the gathered copies routed to them, sums each
// gathered token's copies with their weights into a partial output, and the partial outputs are
// reduce-scattered back to the ranks the tokens came from. The backward gathers the output
// gradients, and reduce-scatters the input gradients and the routing weights' gradients. Both
// collectives are the EP group's all-to-all with whole blocks (an all-gather sends its block to every
// rank; a reduce-scatter sends rank s the rows of its tokens and sums what arrives), so they are
// timed as ep_comm like the all-to-all dispatcher's. The same math as the all-to-all dispatcher:
// the parity tests compare both with one rank.
#include "common/errors.hpp"
#include "kernels/cpu/op_clock.hpp"
#include "runtime/cpu/moe_layer.hpp"

namespace trainsim::cpu {

namespace {

using C = OpCategory;

// Every rank's `mine` (rows_of[s] rows from rank s), concatenated in rank order.
Matrix all_gather(EpGroup& ep, const Matrix& mine, const std::vector<int64_t>& rows_of) {
  const int n = ep.size();
  Matrix send(mine.rows() * n, mine.cols());
  for (int d = 0; d < n; ++d) send.middleRows(d * mine.rows(), mine.rows()) = mine;
  return ep.all_to_all_rows(send, std::vector<int64_t>(static_cast<size_t>(n), mine.rows()), rows_of);
}

// The sum over ranks of each rank's `full` (rows_of[s] rows of rank s's tokens, in rank order),
// this rank's block.
Matrix reduce_scatter(EpGroup& ep, const Matrix& full, const std::vector<int64_t>& rows_of, int64_t mine) {
  const int n = ep.size();
  const Matrix got = ep.all_to_all_rows(full, rows_of, std::vector<int64_t>(static_cast<size_t>(n), mine));
  Matrix sum = Matrix::Zero(mine, full.cols());
  for (int s = 0; s < n; ++s) sum += got.middleRows(s * mine, mine);
  return sum;
}

// The rows of `from` at `slots` / k (the gathered tokens of the copies).
Matrix token_rows(const Matrix& from, const std::vector<int64_t>& slots, int64_t k) {
  Matrix out(static_cast<int64_t>(slots.size()), from.cols());
  for (size_t i = 0; i < slots.size(); ++i) out.row(static_cast<int64_t>(i)) = from.row(slots[i] / k);
  return out;
}

}  // namespace

Matrix moe_forward_allgather(const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep, MoeCache& c) {
  const int64_t k = shape.top_k, local = shape.experts / ep.size(), first = ep.rank() * local;
  TRAINSIM_ASSERT(static_cast<int64_t>(p.experts.size()) == local, "each EP rank holds experts / ep experts");
  AllGatherCache& g = c.gathered;
  {
    const ScopedOpTimer timer(C::kMoeRouter);
    c.routing = runtime::route_top_k(x * p.router->value, k);
  }
  g.rows_of = ep.all_to_all_counts(std::vector<int64_t>(static_cast<size_t>(ep.size()), x.rows()), 1);
  // The routing travels as k expert ids (exact in fp32) and k weights per token.
  Matrix routing(x.rows(), 2 * k);
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int64_t j = 0; j < k; ++j) routing(t, j) = static_cast<float>(c.routing.expert[static_cast<size_t>(t * k + j)]);
  }
  routing.rightCols(k) = c.routing.weight;
  const Matrix tokens = all_gather(ep, x, g.rows_of);
  const Matrix routes = all_gather(ep, routing, g.rows_of);
  const int64_t gathered = tokens.rows();
  g.expert.assign(static_cast<size_t>(gathered * k), 0);
  g.weight = routes.rightCols(k);
  g.copies.assign(static_cast<size_t>(local), {});
  for (int64_t slot = 0; slot < gathered * k; ++slot) {
    const auto e = static_cast<int32_t>(routes(slot / k, slot % k));
    g.expert[static_cast<size_t>(slot)] = e;
    if (e >= first && e < first + local) g.copies[static_cast<size_t>(e - first)].push_back(slot);
  }
  c.experts.assign(static_cast<size_t>(local), FfnCache());
  g.out.assign(static_cast<size_t>(local), Matrix());
  Matrix partial = Matrix::Zero(gathered, x.cols());
  for (int64_t j = 0; j < local; ++j) {
    const std::vector<int64_t>& slots = g.copies[static_cast<size_t>(j)];
    FfnCache& cache = c.experts[static_cast<size_t>(j)];
    cache.in = timed_op(C::kMoePermute, [&] { return token_rows(tokens, slots, k); });
    g.out[static_cast<size_t>(j)] = ffn_forward(cache.in, p.experts[static_cast<size_t>(j)], shape.swiglu, true, cache);
    timed_op(C::kMoePermute, [&] {
      for (size_t i = 0; i < slots.size(); ++i) {
        partial.row(slots[i] / k) += g.weight(slots[i] / k, slots[i] % k) * g.out[static_cast<size_t>(j)].row(static_cast<int64_t>(i));
      }
    });
  }
  return reduce_scatter(ep, partial, g.rows_of, x.rows());
}

Matrix moe_backward_allgather(const Matrix& dy, const Matrix& x, const MoeParams& p, const MoeShape& shape, EpGroup& ep,
                              const MoeCache& c) {
  const int64_t k = shape.top_k;
  const AllGatherCache& g = c.gathered;
  const Matrix dtokens = all_gather(ep, dy, g.rows_of);
  Matrix dinput = Matrix::Zero(dtokens.rows(), x.cols());
  Matrix dweight_all = Matrix::Zero(dtokens.rows(), k);
  for (size_t j = 0; j < g.copies.size(); ++j) {
    const std::vector<int64_t>& slots = g.copies[j];
    // y_t = sum_j w_tj out_tj: d out_tj = w_tj dy_t, d w_tj = dy_t . out_tj.
    const Matrix dout = timed_op(C::kMoePermute, [&] {
      Matrix rows(static_cast<int64_t>(slots.size()), x.cols());
      for (size_t i = 0; i < slots.size(); ++i) {
        const int64_t t = slots[i] / k, s = slots[i] % k;
        rows.row(static_cast<int64_t>(i)) = g.weight(t, s) * dtokens.row(t);
        dweight_all(t, s) = dtokens.row(t).dot(g.out[j].row(static_cast<int64_t>(i)));
      }
      return rows;
    });
    const Matrix din = ffn_backward(dout, c.experts[j].in, p.experts[j], shape.swiglu, c.experts[j]);
    timed_op(C::kMoePermute, [&] {
      for (size_t i = 0; i < slots.size(); ++i) dinput.row(slots[i] / k) += din.row(static_cast<int64_t>(i));
    });
  }
  Matrix dx = reduce_scatter(ep, dinput, g.rows_of, x.rows());
  const Matrix dweight = reduce_scatter(ep, dweight_all, g.rows_of, x.rows());
  {
    const ScopedOpTimer timer(C::kMoeRouter);
    const Matrix dlogits = runtime::route_top_k_backward(c.routing, dweight, shape.experts);
    p.router->grad.noalias() += x.transpose() * dlogits;
    dx.noalias() += dlogits * p.router->value.transpose();
  }
  return dx;
}

}  // namespace trainsim::cpu
