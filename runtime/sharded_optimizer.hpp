// ZeRO-1 and ZeRO-2 for the CPU runtime (Rajbhandari et al. 2020): the parameters of a stage are
// viewed as one flat buffer split into dp equal shards. ZeRO-2 reduce-scatters the gradients so
// each DP rank receives the sum for its shard only; ZeRO-1 all-reduces them and keeps its shard.
// Each rank runs AdamW on its shard (its optimizer states are 1/dp of the whole) and the updated
// shards are all-gathered back into every replica's parameters.
#pragma once

#include <mpi.h>

#include <vector>

#include "runtime/cpu_model.hpp"

namespace trainsim::cpu {

struct AdamSettings {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  double grad_clip = 1.0;
};

class ShardedOptimizer {
 public:
  // `norm_weight(p)` says whether a parameter counts in the global norm on this rank.
  ShardedOptimizer(std::vector<Param>& params, int zero_stage, MPI_Comm dp, MPI_Comm model,
                   std::vector<bool> counts_in_norm);
  // Reduces the gradients over DP (seconds into *dp_seconds), clips by the global norm, updates
  // this rank's shard, gathers the parameters, zeroes the gradients.
  void step(const AdamSettings& adam, int64_t step_number, double* dp_seconds);
  // This rank's optimizer states (for checkpoints).
  std::vector<float>& first_moment() { return m_; }
  std::vector<float>& second_moment() { return v_; }

 private:
  std::vector<Param>& params_;
  int zero_stage_;
  MPI_Comm dp_, model_;
  int dp_size_ = 1, dp_rank_ = 0;
  size_t total_ = 0, shard_ = 0;    // flat sizes (total padded to a multiple of dp)
  std::vector<float> weight_;       // 1 where an element counts in the global norm
  std::vector<float> m_, v_;        // AdamW states of this shard
};

}  // namespace trainsim::cpu
