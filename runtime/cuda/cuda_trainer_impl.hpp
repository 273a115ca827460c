// The CUDA trainer's state and its parts (private to runtime/cuda/cuda_trainer*.cpp):
//  - cuda_trainer.cpp: set-up, one iteration (step, with its phases from the event clock), the run;
//  - cuda_trainer_schedule.cpp: the pipeline schedule, NCCL send/recv, the overlapped DP buckets;
//  - cuda_trainer_optimizer.cpp: gradient reduction, ZeRO gathers, the optimizer step, checkpoints.
// Streams: `compute` (kernels, GEMMs, TP collectives, the exposed reductions), `send` and `recv`
// (pipeline; each pipeline communicator is used on one of them in one order), `reduce` (DP buckets
// that overlap the backward; ZeRO-3's reduce-scatters), `gather` (ZeRO-3's weight all-gathers, one
// layer ahead). Cross-stream order is by events only.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "common/measurement.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/pipeline_schedule.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/cuda/cuda_device.hpp"
#include "runtime/cuda/cuda_optimizer.hpp"
#include "runtime/cuda/cuda_ring_attention.hpp"
#include "runtime/cuda/cuda_stage.hpp"
#include "runtime/cuda/cuda_trainer.hpp"
#include "runtime/cuda/ep_collectives.hpp"
#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/expert_gradients.hpp"
#include "runtime/cuda/gradient_buckets.hpp"
#include "runtime/cuda/nccl_groups.hpp"
#include "runtime/cuda/zero3_exchange.hpp"
#include "runtime/rank_grid.hpp"
#include "runtime/run_options.hpp"

namespace trainsim::cuda {

inline constexpr int64_t kBucketBytes = 25ll << 20;  // PyTorch DDP's default bucket size

class Stream {
 public:
  Stream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

struct CudaTrainer::Impl {
  ModelSpec model;
  ParallelPlan plan;
  runtime::RunOptions options;
  runtime::RankGrid grid;
  CudaDevice device;
  NcclGroups nccl;
  DeviceArena arena;
  Stream compute, send, recv, reduce, gather;
  EventClock clock;
  EventPool events;
  std::unique_ptr<Gemm> gemm;
  std::unique_ptr<TpCollectives> tp;
  std::unique_ptr<EpCollectives> ep;  // MoE: the all-to-alls (a group of one with ep 1)
  std::unique_ptr<CudaStage> stage;
  std::unique_ptr<CudaRingAttention> ring;  // cp > 1: the attention's ring over the CP group
  std::unique_ptr<CudaOptimizer> optimizer;
  // DP below means the dp x cp ranks of nccl.dp (the CPU runtime's dp_cp: every CP rank holds the same weights).
  bool zero = false;                  // ZeRO-1/2 with dp x cp > 1: reduce-scatter, sharded AdamW, all-gather
  bool zero3 = false;                 // ZeRO-3 with dp x cp > 1 (pp is 1): runtime/cuda/zero3_exchange.hpp
  std::unique_ptr<Zero3Exchange> exchange;
  DeviceBuffer<float> shard_grads;    // ZeRO: this rank's shard of the summed gradients
  DeviceBuffer<int32_t> tokens, targets;  // (micro-batches x T) of this iteration
  std::vector<uint8_t> corpus;
  GradientBuckets reduction;  // DP buckets, and the outer ranges reduced after finish_gradients
  DeviceReport report;

  // The members are made in declaration order: the device is selected before the first CUDA call
  // (the streams), the NCCL groups before the buffers.
  Impl(const ModelSpec& m, const ParallelPlan& p, const runtime::RunOptions& o, MPI_Comm world);
  void setup();  // allocations (a DeviceError here is agreed between ranks by the caller)
  ~Impl();

  // cuda_trainer.cpp
  void stop_job_after(const std::exception& e) const;
  void upload_batch(int64_t iteration);
  IterationRecord step(int64_t iteration, const PipelineSchedule& schedule);

  // cuda_trainer_schedule.cpp
  // Pipeline messages: to / from the neighbouring stage, or round the ring between the last stage
  // and the first (interleaved: chunk c's output on the last stage is chunk c + 1's input on the
  // first). Each communicator carries one direction, in the same (micro-batch, chunk) order at both
  // ends, since every stage walks the forwards (and the backwards) in the same order. Null where
  // chunk `chunk` of this stage has nothing to receive or send that way.
  enum class Message { kActivationsIn, kActivationsOut, kGradientsIn, kGradientsOut };
  const NcclComm* pipeline_comm(Message message, int64_t chunk) const;
  // The peer: in a neighbour pair the lower stage is rank 0; in the ring's wrap pair the first stage.
  static int peer(const NcclComm& comm) { return 1 - comm.rank(); }
  size_t message_count() const { return static_cast<size_t>(stage->rows() * stage->hidden()); }
  void launch_bucket(GradientBucket& b);
  ActivationSlot& forward_step(const PipelineStep& step, float scale);
  void backward_step(const PipelineStep& step, ActivationSlot& s, const std::function<void(int64_t)>& after_layer);
  void run_schedule(const PipelineSchedule& schedule);

  // cuda_trainer_optimizer.cpp
  void reduce_gradients();
  void gather_zero_weights();
  runtime::CheckpointHeader header(int64_t iteration) const;
  void save_checkpoint(int64_t iteration);
  int64_t load_checkpoint();  // the latest complete checkpoint's iteration
  void optimizer_step();
};

}  // namespace trainsim::cuda
