// The CUDA trainer's pipeline schedule (runtime/cuda/cuda_trainer_impl.hpp): each step of this
// stage in order, activations and gradients over NCCL send/recv on their own streams, and the DP
// buckets launched on the reduce stream as the backward finishes their layers.
#include "runtime/cuda/cuda_trainer_impl.hpp"

#include <functional>

#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

void CudaTrainer::Impl::launch_bucket(GradientBucket& b) {
  // GPU-CHECK: with overlap this DP all-reduce (reduce stream) runs while the backward's TP
  // collectives run on the compute stream: two communicators' kernels at once on one GPU, enqueued
  // in the same order on every rank. Run tp 2 x dp 2 with overlap under NCCL_DEBUG=WARN and a
  // timeout to see that they co-run (no hang) and that the bucket hides behind the backward.
  events.order(compute, reduce);
  const ParamStore& params = stage->params();  // with ep > 1 the experts' gradients over expert DP
  all_reduce_gradients(params.grads(), params.views(), b.begin, b.end, nccl.dp, plan.ep > 1 ? &nccl.expert_dp : nullptr, reduce);
  b.launched = true;
}

const NcclComm* CudaTrainer::Impl::pipeline_comm(Message message, int64_t chunk) const {
  const bool from_before = message == Message::kActivationsIn || message == Message::kGradientsOut;
  if ((from_before ? grid.input_from(chunk) : grid.output_to(chunk)) < 0) return nullptr;
  switch (message) {
    case Message::kActivationsIn: return grid.pp_rank > 0 ? &nccl.activations_from_prev : &nccl.wrap_activations;
    case Message::kActivationsOut: return grid.pp_rank < plan.pp - 1 ? &nccl.activations_to_next : &nccl.wrap_activations;
    case Message::kGradientsIn: return grid.pp_rank < plan.pp - 1 ? &nccl.gradients_from_next : &nccl.wrap_gradients;
    case Message::kGradientsOut: return grid.pp_rank > 0 ? &nccl.gradients_to_prev : &nccl.wrap_gradients;
  }
  return nullptr;
}

// One forward step: a free slot of the chunk, its input received, the forward, its output sent.
ActivationSlot& CudaTrainer::Impl::forward_step(const PipelineStep& step, float scale) {
  ActivationSlot& s = stage->acquire_slot(step.chunk);
  // GPU-CHECK: with one slot (last stage, 1F1B) the next activations are received only once the
  // previous backward is done; the previous stage's send of them then waits (rendezvous above
  // NCCL's buffer size) and holds up the gradient sends queued behind it on its send stream.
  // Correct, but compare pp_comm_s / bubble_s with the simulator; a spare receive slot per
  // stage would decouple them.
  if (s.used) {  // its previous micro-batch's backward and sends must be over
    check_cuda(cudaStreamWaitEvent(recv, s.released, 0), "cudaStreamWaitEvent (slot released)");
    check_cuda(cudaStreamWaitEvent(compute, s.sends_done, 0), "cudaStreamWaitEvent (slot sends)");
  }
  s.tokens = tokens.data() + step.micro_batch * stage->tokens();
  s.targets = targets.data() + step.micro_batch * stage->tokens();
  if (const NcclComm* in = pipeline_comm(Message::kActivationsIn, step.chunk)) {
    check_nccl(ncclRecv(s.x[0].data(), message_count(), ncclBfloat16, peer(*in), in->get(), recv), "ncclRecv (activations)");
    events.order(recv, compute);
  }
  const int span = clock.begin(compute);
  stage->forward(s, scale);
  clock.end(span, SpanKind::kForward, compute);
  if (const NcclComm* out = pipeline_comm(Message::kActivationsOut, step.chunk)) {
    events.order(compute, send);
    check_nccl(ncclSend(s.x.back().data(), message_count(), ncclBfloat16, peer(*out), out->get(), send), "ncclSend (activations)");
    check_cuda(cudaEventRecord(s.sends_done, send), "cudaEventRecord (slot sends)");
  }
  return s;
}

// One backward step on `s`: its output gradient received, the backward (`after_layer` after each
// layer), its input gradient sent, the slot released.
void CudaTrainer::Impl::backward_step(const PipelineStep& step, ActivationSlot& s, const std::function<void(int64_t)>& after_layer) {
  if (const NcclComm* in = pipeline_comm(Message::kGradientsIn, step.chunk)) {
    check_nccl(ncclRecv(s.grad_in.data(), message_count(), ncclBfloat16, peer(*in), in->get(), recv), "ncclRecv (gradients)");
    events.order(recv, compute);
  }
  const int span = clock.begin(compute);
  stage->backward(s, after_layer);
  clock.end(span, SpanKind::kBackward, compute);
  if (const NcclComm* out = pipeline_comm(Message::kGradientsOut, step.chunk)) {
    events.order(compute, send);
    check_nccl(ncclSend(s.grad_out.data(), message_count(), ncclBfloat16, peer(*out), out->get(), send), "ncclSend (gradients)");
    check_cuda(cudaEventRecord(s.sends_done, send), "cudaEventRecord (slot sends)");
  }
  check_cuda(cudaEventRecord(s.released, compute), "cudaEventRecord (slot released)");
  s.used = true;
  stage->release_slot(s);
}

void CudaTrainer::Impl::run_schedule(const PipelineSchedule& schedule) {
  const float scale = 1.0f / static_cast<float>(plan.global_batch * model.seq_len);
  const std::vector<PipelineStep>& steps = schedule.steps[static_cast<size_t>(grid.pp_rank)];
  std::vector<size_t> last_backward(static_cast<size_t>(grid.chunks), 0);  // per chunk: its layers' gradients are final after it
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == StepKind::kBackward) last_backward[static_cast<size_t>(steps[i].chunk)] = i;
  }
  const bool overlap = plan.dp_overlap && nccl.dp.size() > 1 && !zero && !zero3;
  for (GradientBucket& b : reduction.buckets) b.launched = false;
  const std::function<void(int64_t)> bucket_hook = [&](int64_t layer) {
    for (GradientBucket& b : reduction.buckets) {
      if (!b.launched && b.ready_after == layer) launch_bucket(b);
    }
  };
  const std::function<void(int64_t)> zero3_hook = [this](int64_t layer) { exchange->after_layer_backward(layer); };
  std::vector<std::vector<ActivationSlot*>> slot_of(static_cast<size_t>(plan.micro_batches()),
                                                    std::vector<ActivationSlot*>(static_cast<size_t>(grid.chunks), nullptr));
  for (size_t i = 0; i < steps.size(); ++i) {
    const PipelineStep& step = steps[i];
    ActivationSlot*& slot = slot_of[static_cast<size_t>(step.micro_batch)][static_cast<size_t>(step.chunk)];
    if (step.kind == StepKind::kForward) {
      slot = &forward_step(step, scale);
    } else if (zero3) {
      backward_step(step, *slot, zero3_hook);
    } else {
      const bool last = i == last_backward[static_cast<size_t>(step.chunk)];
      backward_step(step, *slot, overlap && last ? bucket_hook : std::function<void(int64_t)>());
    }
  }
  if (plan.pp > 1) {  // the last sends not hidden behind compute
    const int span = clock.begin(compute);
    events.order(send, compute);
    clock.end(span, SpanKind::kPpExposed, compute);
  }
}

}  // namespace trainsim::cuda
