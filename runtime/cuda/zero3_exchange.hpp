// ZeRO-3 (FSDP) for the CUDA trainer: the stage's ParamStore keeps this rank's shard space
// (param_store.hpp); this class moves the weights and gradients between it and the stage. Each
// layer's weights are all-gathered into gather buffer l % 2 before the layer's forward and backward,
// the next layer's gather issued on the gather stream (its own communicator) while the layer runs,
// and a buffer that still holds the layer is not gathered again; after each backward of a layer its
// gradients are reduce-scattered on the reduce stream and added to the shard, behind the next
// layer's backward. The units outside the layers (embeddings, final norm, LM head) are gathered at
// the start of the iteration and reduced at its end. Waits inside a forward or backward are timed
// as DP spans.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/cuda_stage.hpp"
#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/nccl_groups.hpp"

namespace trainsim::cuda {

class Zero3Exchange {
 public:
  struct Streams {
    cudaStream_t compute, gather, reduce;
  };
  // Registers itself as the stage's before-layer hook. `gather_comm` and `reduce_comm` span the DP
  // group, each used on one stream only.
  Zero3Exchange(CudaStage& stage, Streams streams, const NcclComm& gather_comm, const NcclComm& reduce_comm, EventPool& events,
                EventClock& clock, DeviceArena& arena);

  // Start of an iteration (the weights changed at the last step): the outer units gathered, their
  // gradients zeroed; the compute stream waits for them.
  void begin_iteration();
  // Before layer l's forward or backward: its weights present, the next layer's gather issued, and
  // for the backward its gradient buffer reduced and zeroed.
  void before_layer(int64_t layer, bool backward);
  // After layer l's backward: its SP sums, then its reduce-scatter into the shard.
  void after_layer_backward(int64_t layer);
  // End of the backward: the outer units' gradients reduced; the compute stream waits for every
  // reduce-scatter of the iteration.
  void reduce_outer_units();

 private:
  void gather_unit(int64_t unit);
  void reduce_unit(int64_t unit, size_t k);
  void fetch_layer(int64_t layer);

  CudaStage& stage_;
  Streams streams_;
  const NcclComm& gather_comm_;
  const NcclComm& reduce_comm_;
  EventPool& events_;
  EventClock& clock_;
  int64_t held_[2] = {-1, -1};                     // the layer each gather buffer holds (this iteration)
  cudaEvent_t gathered_[2] = {nullptr, nullptr};   // gather stream: that gather done
  cudaEvent_t grads_free_[2] = {nullptr, nullptr};  // reduce stream: that gradient buffer reduced
  DeviceBuffer<float> piece_[2];                   // a reduce-scatter's result, added to the shard after
  std::vector<int64_t> outer_units_;
};

}  // namespace trainsim::cuda
