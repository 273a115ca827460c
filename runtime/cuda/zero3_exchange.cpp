// Zero3Exchange; see zero3_exchange.hpp.
#include "runtime/cuda/zero3_exchange.hpp"

#include <algorithm>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

Zero3Exchange::Zero3Exchange(CudaStage& stage, Streams streams, const NcclComm& gather_comm, const NcclComm& reduce_comm,
                             EventPool& events, EventClock& clock, DeviceArena& arena)
    : stage_(stage), streams_(streams), gather_comm_(gather_comm), reduce_comm_(reduce_comm), events_(events), clock_(clock) {
  const ParamStore& params = stage.params();
  const ParamLayout& layout = params.layout();
  const ShardSpace& space = params.shard_space();
  int64_t largest = 0;
  for (size_t u = 0; u < layout.units.size(); ++u) {
    largest = std::max(largest, space.piece(layout, static_cast<int64_t>(u)));
    if (std::find(layout.unit_of_layer.begin(), layout.unit_of_layer.end(), static_cast<int64_t>(u)) == layout.unit_of_layer.end()) {
      outer_units_.push_back(static_cast<int64_t>(u));
    }
  }
  for (DeviceBuffer<float>& piece : piece_) piece = DeviceBuffer<float>(arena, largest, "ZeRO-3 reduce-scatter result");
  stage.set_before_layer([this](int64_t layer, bool backward) { before_layer(layer, backward); });
}

// All-gathers unit u's pieces into its whole buffer on the gather stream.
void Zero3Exchange::gather_unit(int64_t unit) {
  const ParamStore& p = stage_.params();
  const ShardSpace& space = p.shard_space();
  check_nccl(ncclAllGather(p.weight_shards() + space.shard_offset[static_cast<size_t>(unit)], p.unit_weights(unit),
                           static_cast<size_t>(space.piece(p.layout(), unit)), ncclBfloat16, gather_comm_.get(), streams_.gather),
             "ncclAllGather (ZeRO-3 weights)");
}

// Reduce-scatters unit u's whole gradients on the reduce stream and adds this rank's piece to its
// shard, through result buffer k.
void Zero3Exchange::reduce_unit(int64_t unit, size_t k) {
  const ParamStore& p = stage_.params();
  const ShardSpace& space = p.shard_space();
  const int64_t n = space.piece(p.layout(), unit);
  check_nccl(ncclReduceScatter(p.unit_grads(unit), piece_[k].data(), static_cast<size_t>(n), ncclFloat, ncclSum, reduce_comm_.get(),
                               streams_.reduce),
             "ncclReduceScatter (ZeRO-3 gradients)");
  accumulate_fp32(p.grad_shards() + space.shard_offset[static_cast<size_t>(unit)], piece_[k].data(), n, streams_.reduce);
}

// Issues layer l's gather into buffer l % 2 unless that buffer holds it already.
// GPU-CHECK: three communicators run at once here (dp_gather on `gather`, dp on `reduce`, tp on
// `compute`), each on one stream and launched in the same program order on every rank, as NCCL
// asks. Run DP2 x TP2 ZeRO-3 with a timeout: a hang would mean serialising the gathers and
// reduce-scatters on one stream (as PyTorch's process group does), at the cost of overlap.
void Zero3Exchange::fetch_layer(int64_t layer) {
  const size_t k = static_cast<size_t>(layer % 2);
  if (held_[k] == layer) return;
  events_.order(streams_.compute, streams_.gather);  // the layer using this buffer before is done with it
  gather_unit(stage_.params().layout().unit_of_layer[static_cast<size_t>(layer)]);
  gathered_[k] = events_.record(streams_.gather);
  held_[k] = layer;
}

void Zero3Exchange::before_layer(int64_t layer, bool backward) {
  const size_t k = static_cast<size_t>(layer % 2);
  const cudaStream_t compute = streams_.compute;
  fetch_layer(layer);
  const int span = clock_.begin(compute);
  check_cuda(cudaStreamWaitEvent(compute, gathered_[k], 0), "cudaStreamWaitEvent (ZeRO-3 gather)");
  if (backward && grads_free_[k] != nullptr) {
    check_cuda(cudaStreamWaitEvent(compute, grads_free_[k], 0), "cudaStreamWaitEvent (ZeRO-3 gradient buffer)");
  }
  clock_.end(span, backward ? SpanKind::kDpInBackward : SpanKind::kDpInForward, compute);
  const int64_t next = backward ? layer - 1 : layer + 1;
  if (next >= 0 && next < stage_.params().layer_count()) fetch_layer(next);
  if (backward) {
    const ParamStore& p = stage_.params();
    const int64_t unit = p.layout().unit_of_layer[static_cast<size_t>(layer)];
    const auto [begin, end] = p.layout().units[static_cast<size_t>(unit)];
    check_cuda(cudaMemsetAsync(p.unit_grads(unit), 0, static_cast<size_t>(end - begin) * sizeof(float), compute),
               "cudaMemsetAsync (ZeRO-3 layer gradients)");
  }
}

void Zero3Exchange::after_layer_backward(int64_t layer) {
  const size_t k = static_cast<size_t>(layer % 2);
  stage_.finish_layer_gradients(layer);
  events_.order(streams_.compute, streams_.reduce);
  reduce_unit(stage_.params().layout().unit_of_layer[static_cast<size_t>(layer)], k);
  grads_free_[k] = events_.record(streams_.reduce);
}

void Zero3Exchange::begin_iteration() {
  held_[0] = held_[1] = -1;
  gathered_[0] = gathered_[1] = grads_free_[0] = grads_free_[1] = nullptr;
  const ParamStore& p = stage_.params();
  events_.order(streams_.compute, streams_.gather);
  for (int64_t unit : outer_units_) {
    gather_unit(unit);
    const auto [begin, end] = p.layout().units[static_cast<size_t>(unit)];
    check_cuda(cudaMemsetAsync(p.unit_grads(unit), 0, static_cast<size_t>(end - begin) * sizeof(float), streams_.compute),
               "cudaMemsetAsync (ZeRO-3 outer gradients)");
  }
  const int span = clock_.begin(streams_.compute);
  events_.order(streams_.gather, streams_.compute);
  clock_.end(span, SpanKind::kDpExposed, streams_.compute);
}

void Zero3Exchange::reduce_outer_units() {
  events_.order(streams_.compute, streams_.reduce);
  for (int64_t unit : outer_units_) reduce_unit(unit, 0);
  events_.order(streams_.reduce, streams_.compute);
}

}  // namespace trainsim::cuda
