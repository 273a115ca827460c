// Data parallelism and the optimizer of one pipeline stage, for every ZeRO stage (Rajbhandari et
// al. 2020), the way Megatron-LM's DDP and distributed optimizer lay it out: the stage's
// parameters are grouped into gradient buckets in backward order (layers last to first, then the
// embeddings and final norm), each bucket a flat buffer padded to a multiple of dp and split into
// dp equal shards.
//  - ZeRO-0: each bucket's gradients are all-reduced; every rank runs AdamW on all of them.
//  - ZeRO-1: all-reduced; each rank updates its shard (1/dp of the optimizer states) and the
//    updated shards are all-gathered into every replica's weights.
//  - ZeRO-2: reduce-scattered (each rank receives the sum of its shard only), then as ZeRO-1.
//  - ZeRO-3: every layer is its own bucket and only its shard of the weights is kept: the layer's
//    weights are all-gathered before each use (forward, backward) and released after; its
//    gradients are reduce-scattered after every micro-batch's backward and summed into the shard.
//    The embeddings and final norm are gathered once per iteration.
// With overlap (plan dp_overlap), a bucket's reduction starts as soon as its layers finish their
// last backward of the iteration (MPI non-blocking collectives, progressed after every layer);
// without, all reductions run after the backward. Gradients are clipped by the global norm. With
// context parallelism "dp" below is the dp x cp ranks (Megatron's dp_cp group): each CP rank's
// gradients cover its own tokens and the weights are the same on every CP rank. An MoE layer's
// expert parameters go to buckets of their own whose "dp" is the expert-DP group (the ranks holding
// the same experts: tp x cp x dp / ep of them, plan/rank_grid's kExpertDp; with ep 1 the dp x cp
// ranks holding the same TP slices of them): their gradients are reduced, and with ZeRO their
// states and (ZeRO-3) weights sharded, over those ranks only; each already sums the copies every
// rank of its EP group sent the expert.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "common/measurement.hpp"
#include "runtime/cpu/cpu_model.hpp"

namespace trainsim::cpu {

struct AdamSettings {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  double grad_clip = 1.0;
};

struct DataParallelConfig {
  int zero_stage = 0;
  bool overlap = true;
  int64_t bucket_params = 40'000'000;  // Megatron-LM's DDP bucket (ZeRO-3: one layer per bucket)
};

struct DataParallelComms {
  MPI_Comm dp = MPI_COMM_NULL;         // the ranks that reduce gradients and shard ZeRO: dp x cp (Megatron's dp_cp)
  MPI_Comm expert_dp = MPI_COMM_NULL;  // the same for expert parameters (MoE; unused by a dense model)
  // The ranks of a stage that hold different experts or different slices of them, each expert
  // element once: the EP group, or with ep 1 the TP group (the experts split over TP). For the
  // global norm: expert squares are summed over it, then counted once per stage (on TP rank 0).
  MPI_Comm expert_model = MPI_COMM_NULL;
  MPI_Comm model = MPI_COMM_NULL;      // TP x PP ranks of one replica (for the global norm)
  MPI_Comm embedding = MPI_COMM_NULL;  // first and last stage holding the tied embedding (pp > 1)
};

class DataParallel final : public LayerHooks {
 public:
  // `counts_in_norm[i]`: whether parameter i counts in the global norm on this rank. Time spent
  // in DP collectives goes to clock.dp_comm_exposed_s.
  DataParallel(StageModel& stage, TpGroup& tp, const DataParallelComms& comms, const DataParallelConfig& config,
               std::vector<bool> counts_in_norm, PhaseBreakdown& clock);
  ~DataParallel() override;
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Before the iteration's first forward (ZeRO-3: gathers the embeddings and final norm).
  void begin_iteration();
  // Before each backward: whether it is the iteration's last on this stage (its gradients are final).
  void begin_backward(bool last_micro_batch) { last_backward_ = last_micro_batch; }
  // After the schedule: the remaining reductions, clipping, AdamW, the weight gather.
  void step(const AdamSettings& adam, int64_t step_number);

  void before_layer(int64_t layer, bool backward) override;
  void after_layer_forward(int64_t layer) override;
  void after_layer_backward(int64_t layer) override;

  // Everything a checkpoint must hold on this rank (weights or weight shards, AdamW states).
  std::vector<std::pair<float*, size_t>> state_tensors();
  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<size_t> params;
    int64_t layers = 0, layers_done = 0;  // layers in the bucket (0: the outer parameters)
    bool experts = false;           // expert parameters, reduced and sharded over the expert-DP group
    MPI_Comm comm = MPI_COMM_NULL;  // dp x cp, or expert DP
    int ranks = 1, rank = 0;        // in comm
    size_t size = 0, padded = 0, shard = 0;
    std::vector<float> flat;        // packed gradients (ZeRO-0/1: the reduced result), from launch to the update
    std::vector<float> grad_shard;  // ZeRO-2/3: the reduced gradients of this rank's shard
    std::vector<float> master;      // ZeRO-3: this rank's shard of the weights
    std::vector<std::pair<size_t, size_t>> norm_runs;  // [from, to) elements that count in the global norm
    std::vector<float> m, v;        // AdamW states (the whole bucket for ZeRO-0, else the shard)
    MPI_Request request = MPI_REQUEST_NULL;
    bool launched = false;
  };

  bool zero3() const { return config_.zero_stage >= 3; }
  void add_layer_buckets(int64_t layer);
  void open_bucket(Bucket& b, const std::vector<bool>& counts_in_norm);
  void pack_grads(const Bucket& b, std::vector<float>& out) const;
  void pack_values(const Bucket& b, std::vector<float>& out) const;
  void unpack_values(const Bucket& b, const std::vector<float>& flat);
  void gather(Bucket& b, bool with_grads);
  void release(Bucket& b);
  void launch(Bucket& b);
  void reduce_scatter_into_shard(Bucket& b);
  void progress();
  double global_norm();
  void adam_update(Bucket& b, const AdamSettings& adam, int64_t step_number, float clip);
  double timed_start() const;
  void timed_stop(double start);

  StageModel& stage_;
  TpGroup& tp_;
  DataParallelComms comms_;
  DataParallelConfig config_;
  PhaseBreakdown& clock_;
  static constexpr size_t kNoBucket = static_cast<size_t>(-1);
  std::vector<Bucket> buckets_;
  std::vector<std::vector<size_t>> buckets_of_layer_;  // the dense bucket and (MoE) the expert bucket holding each layer
  size_t open_[2] = {kNoBucket, kNoBucket};             // while building: the dense and expert bucket taking layers
  bool has_experts_ = false;
  std::vector<std::pair<int64_t, int64_t>> shapes_;  // rows, cols of every parameter
  bool last_backward_ = false;
};

}  // namespace trainsim::cpu
