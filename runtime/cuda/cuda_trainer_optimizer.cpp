// The CUDA trainer's gradient reduction, optimizer step and checkpoints
// (runtime/cuda/cuda_trainer_impl.hpp).
#include "runtime/cuda/cuda_trainer_impl.hpp"

#include "kernels/cuda/cuda_check.cuh"
#include "runtime/watchdog.hpp"

namespace trainsim::cuda {

void CudaTrainer::Impl::reduce_gradients() {
  ParamStore& params = stage->params();
  if (zero3) {  // the layers were reduced after each backward; now the units outside them
    stage->finish_outer_gradients();
    const int span = clock.begin(compute);
    exchange->reduce_outer_units();
    clock.end(span, SpanKind::kDpExposed, compute);
    return;
  }
  if (nccl.dp.size() > 1 && !zero) {  // buckets not yet started, then wait for all of them
    const int span = clock.begin(compute);
    for (GradientBucket& b : reduction.buckets) {
      if (!b.launched) launch_bucket(b);
    }
    events.order(reduce, compute);
    clock.end(span, SpanKind::kDpExposed, compute);
  }
  stage->finish_gradients();  // SP sums over TP (after the DP sums: both are sums, so the order is free)
  const int span = clock.begin(compute);
  if (nccl.embedding.active()) {  // tied embedding: first and last stage hold copies
    const ParamView& wte = params.view("wte");
    check_nccl(ncclAllReduce(params.grads() + wte.offset, params.grads() + wte.offset, static_cast<size_t>(wte.count()), ncclFloat,
                             ncclSum, nccl.embedding.get(), compute),
               "ncclAllReduce (tied embedding)");
  }
  if (nccl.dp.size() > 1 && !zero) {
    check_nccl(ncclGroupStart(), "ncclGroupStart (dp outer gradients)");
    for (const auto& [begin, end] : reduction.outer_ranges) {
      if (end > begin) {
        check_nccl(ncclAllReduce(params.grads() + begin, params.grads() + begin, static_cast<size_t>(end - begin), ncclFloat, ncclSum,
                                 nccl.dp.get(), compute),
                   "ncclAllReduce (dp outer gradients)");
      }
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd (dp outer gradients)");
  }
  if (zero) {
    check_nccl(ncclReduceScatter(params.grads(), shard_grads.data(), static_cast<size_t>(shard_grads.count()), ncclFloat, ncclSum,
                                 nccl.dp.get(), compute),
               "ncclReduceScatter (ZeRO gradients)");
  }
  clock.end(span, SpanKind::kDpExposed, compute);
}

// All-gathers every DP rank's shard of the bf16 working weights (ZeRO), in place.
void CudaTrainer::Impl::gather_zero_weights() {
  ParamStore& params = stage->params();
  check_nccl(ncclAllGather(params.weights() + optimizer->begin(), params.weights(), static_cast<size_t>(optimizer->count()),
                           ncclBfloat16, nccl.dp.get(), compute),
             "ncclAllGather (ZeRO weights)");
}

// Checkpoints (runtime/checkpoint.hpp, backend 1): per rank the optimizer's fp32 master weights
// and AdamW moments of its range; the bf16 working weights are rebuilt from them on resume.
runtime::CheckpointHeader CudaTrainer::Impl::header(int64_t iteration) const {
  runtime::CheckpointHeader h = runtime::checkpoint_header(model, plan, grid.world_size, options.seed, 1);
  h.iteration = iteration;
  h.optimizer_step = optimizer->steps_taken();
  return h;
}

void CudaTrainer::Impl::save_checkpoint(int64_t iteration) {
  runtime::CheckpointData data;
  data.header = header(iteration);
  data.tensors = optimizer->state_to_host(compute);
  runtime::note_progress(iteration, runtime::RunPhase::kCheckpointSave);
  runtime::save_checkpoint_set(grid.world, options.checkpoint_dir, options.checkpoint_every, data);
}

// Loads the latest complete checkpoint; returns its iteration.
int64_t CudaTrainer::Impl::load_checkpoint() {
  const size_t n = static_cast<size_t>(optimizer->count());
  runtime::note_progress(-1, runtime::RunPhase::kCheckpointLoad);
  const auto tell = [&](const std::string& note) {
    if (grid.world_rank == 0 && options.notify) options.notify(note);
  };
  const runtime::CheckpointData data = options.resume_from_last_good
                                       ? runtime::load_checkpoint_set(grid.world, options.checkpoint_dir, header(0), {n, n, n}, tell)
                                       : runtime::load_checkpoint_set(grid.world, options.checkpoint_dir, header(0), {n, n, n});
  optimizer->state_from_host(data.tensors, data.header.optimizer_step, compute);
  if (zero) {
    gather_zero_weights();
    check_cuda(cudaStreamSynchronize(compute), "cudaStreamSynchronize (resume)");
  }
  return data.header.iteration;
}

void CudaTrainer::Impl::optimizer_step() {
  ParamStore& params = stage->params();
  // GPU-CHECK: this span holds the host's wait in the norm's MPI_Allreduce for the last rank to
  // finish its backward (the first stage, in 1F1B), as the CPU trainer's optimizer_s does: the
  // pipeline's drain skew is counted as optimizer time, not bubble. Compare with the simulator.
  int span = clock.begin(compute);
  const float lr = static_cast<float>(options.learning_rate);
  if (zero3) {  // as ZeRO-1/2 below, the shard space's gradients
    optimizer->step(params.grad_shards(), grid.world, lr, options.grad_clip, compute);
    check_cuda(cudaMemsetAsync(params.grad_shards(), 0, static_cast<size_t>(params.shard_space().count) * sizeof(float), compute),
               "cudaMemsetAsync (zero gradient shards)");
    clock.end(span, SpanKind::kOptimizer, compute);
    return;
  }
  if (zero) {  // shard sums over the whole job: each element of a replica lies in one DP rank's shard
    optimizer->step(shard_grads.data(), grid.world, lr, options.grad_clip, compute);
  } else {
    // ep > 1: each EP rank holds other experts; the norm is summed over every rank (expert_gradients.hpp).
    optimizer->step(params.grads(), plan.ep > 1 ? grid.world : grid.model, lr, options.grad_clip, compute);
  }
  check_cuda(cudaMemsetAsync(params.grads(), 0, static_cast<size_t>(params.padded_count()) * sizeof(float), compute),
             "cudaMemsetAsync (zero gradients)");
  clock.end(span, SpanKind::kOptimizer, compute);
  if (zero) {  // every rank's updated shard of the bf16 working weights, in place
    span = clock.begin(compute);
    gather_zero_weights();
    clock.end(span, SpanKind::kDpExposed, compute);
  }
}

}  // namespace trainsim::cuda
