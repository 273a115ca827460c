// Flat-buffer ZeRO-1/2.
#include "runtime/sharded_optimizer.hpp"

#include <cmath>

#include "runtime/mpi_groups.hpp"

namespace trainsim::cpu {

ShardedOptimizer::ShardedOptimizer(std::vector<Param>& params, int zero_stage, MPI_Comm dp, MPI_Comm model,
                                   std::vector<bool> counts_in_norm)
    : params_(params), zero_stage_(zero_stage), dp_(dp), model_(model) {
  MPI_Comm_size(dp, &dp_size_);
  MPI_Comm_rank(dp, &dp_rank_);
  size_t size = 0;
  for (const Param& p : params) size += static_cast<size_t>(p.value.size());
  const size_t parts = static_cast<size_t>(dp_size_);
  total_ = (size + parts - 1) / parts * parts;
  shard_ = total_ / parts;
  weight_.assign(total_, 0.0f);
  size_t at = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const size_t n = static_cast<size_t>(params[i].value.size());
    if (counts_in_norm[i]) std::fill(weight_.begin() + static_cast<std::ptrdiff_t>(at), weight_.begin() + static_cast<std::ptrdiff_t>(at + n), 1.0f);
    at += n;
  }
  m_.assign(shard_, 0.0f);
  v_.assign(shard_, 0.0f);
}

void ShardedOptimizer::step(const AdamSettings& adam, int64_t step_number, double* dp_seconds) {
  std::vector<float> flat(total_, 0.0f);
  size_t at = 0;
  for (const Param& p : params_) {
    std::copy(p.grad.data(), p.grad.data() + p.grad.size(), flat.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<size_t>(p.grad.size());
  }
  const size_t begin = static_cast<size_t>(dp_rank_) * shard_;
  std::vector<float> grad(shard_);
  double start = wall_s();
  if (zero_stage_ >= 2) {
    MPI_Reduce_scatter_block(flat.data(), grad.data(), static_cast<int>(shard_), MPI_FLOAT, MPI_SUM, dp_);
  } else {
    MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(total_), MPI_FLOAT, MPI_SUM, dp_);
    std::copy(flat.begin() + static_cast<std::ptrdiff_t>(begin), flat.begin() + static_cast<std::ptrdiff_t>(begin + shard_), grad.begin());
  }
  *dp_seconds += wall_s() - start;
  // Global norm: shards over DP, then TP x PP ranks of the replica.
  double local = 0;
  for (size_t i = 0; i < shard_; ++i) local += static_cast<double>(weight_[begin + i]) * grad[i] * grad[i];
  double replica = 0, total = 0;
  MPI_Allreduce(&local, &replica, 1, MPI_DOUBLE, MPI_SUM, dp_);
  MPI_Allreduce(&replica, &total, 1, MPI_DOUBLE, MPI_SUM, model_);
  const double norm = std::sqrt(total);
  const float clip = norm > adam.grad_clip ? static_cast<float>(adam.grad_clip / norm) : 1.0f;
  const float c1 = 1.0f - std::pow(adam.beta1, static_cast<float>(step_number));
  const float c2 = 1.0f - std::pow(adam.beta2, static_cast<float>(step_number));
  std::vector<float> values(total_, 0.0f);
  at = 0;
  for (const Param& p : params_) {
    std::copy(p.value.data(), p.value.data() + p.value.size(), values.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<size_t>(p.value.size());
  }
  for (size_t i = 0; i < shard_; ++i) {
    const float g = grad[i] * clip;
    m_[i] = adam.beta1 * m_[i] + (1 - adam.beta1) * g;
    v_[i] = adam.beta2 * v_[i] + (1 - adam.beta2) * g * g;
    values[begin + i] -= adam.lr * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + adam.eps);
  }
  start = wall_s();
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data(), static_cast<int>(shard_), MPI_FLOAT, dp_);
  *dp_seconds += wall_s() - start;
  at = 0;
  for (Param& p : params_) {
    std::copy(values.begin() + static_cast<std::ptrdiff_t>(at), values.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(p.value.size())), p.value.data());
    at += static_cast<size_t>(p.value.size());
    p.grad.setZero();
  }
}

}  // namespace trainsim::cpu
