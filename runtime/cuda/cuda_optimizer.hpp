// AdamW for a GPU stage (as the CPU trainer: beta 0.9 / 0.95, eps 1e-8, no weight decay) with
// global-norm clipping. It owns the fp32 master weights and both moments over a range of the flat
// parameter buffer (all of it, or with ZeRO-1/2 this DP rank's shard) or, with ZeRO-3, over the
// rank's shard space; the update writes the bf16 working copy of what it owns. The norm: sum of squares on the device over the gradients that
// count (each TP slice once, replicated tensors once, the tied embedding once), then a host
// all-reduce of one double over `norm_comm`.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/param_store.hpp"

namespace trainsim::cuda {

// Whether a parameter's gradient counts in the global norm on the rank at (pp_rank, tp_rank) of a
// `pp`-stage pipeline, as the CPU trainer: each TP slice once, tensors replicated over TP once (on
// TP rank 0), the tied embedding once (on the first stage).
bool counts_in_norm(const ParamView& v, int64_t pp, int64_t pp_rank, int64_t tp_rank);

// [from, to) runs, relative to `begin`, of the elements in [begin, end) whose gradients count
// (counts[i] for views[i]); runs of neighbouring counting tensors are joined over the zero padding
// between them.
std::vector<std::pair<int64_t, int64_t>> norm_runs(const std::vector<ParamView>& views, const std::vector<bool>& counts,
                                                   int64_t begin, int64_t end);

class CudaOptimizer {
 public:
  // [begin, end): elements of the flat buffers this optimizer updates; counts[i]: whether
  // params.views()[i] counts in the global norm. Uploads the master copy from the initial values.
  CudaOptimizer(const ParamStore& params, int64_t begin, int64_t end, const std::vector<bool>& counts, DeviceArena& arena,
                cudaStream_t stream);
  // ZeRO-3 (params.zero3()): the rank's shard space, its weight shards updated.
  CudaOptimizer(const ParamStore& params, const std::vector<bool>& counts, DeviceArena& arena, cudaStream_t stream);

  // grads: the gradients of [begin, end). Clips by the global norm (grad_clip), updates, and
  // returns the norm before clipping. Synchronises `stream` once (for the norm).
  double step(const float* grads, MPI_Comm norm_comm, float learning_rate, double grad_clip, cudaStream_t stream);

  // Checkpoints: the fp32 master weights and both AdamW moments of [begin, end), copied to the host
  // once `stream` has finished its work.
  std::vector<std::vector<float>> state_to_host(cudaStream_t stream) const;
  // Restores them (sizes as state_to_host gives) and the steps taken, and rewrites the bf16 working
  // weights of [begin, end) from the master (with ZeRO the caller all-gathers the other shards).
  void state_from_host(const std::vector<std::vector<float>>& state, int64_t steps, cudaStream_t stream);

  int64_t steps_taken() const { return step_; }
  int64_t begin() const { return begin_; }
  int64_t count() const { return end_ - begin_; }

 private:
  // Master copy from `initial` (host, end - begin values), moments zeroed.
  void allocate(const float* initial, DeviceArena& arena, cudaStream_t stream);

  int64_t begin_, end_;
  __nv_bfloat16* weights_;  // the bf16 working copy of [begin, end)
  int64_t step_ = 0;
  std::vector<std::pair<int64_t, int64_t>> norm_runs_;  // [from, to) relative to begin
  DeviceBuffer<float> master_, m_, v_;
  DeviceBuffer<double> norm_sq_;
};

}  // namespace trainsim::cuda
