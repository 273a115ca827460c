// The CPU trainer's pipeline schedule (runtime/cpu/trainer_impl.hpp): each step of this stage in
// order, activations and gradients over MPI between stages, and the phase clock of each.
#include "runtime/cpu/trainer_impl.hpp"

#include "runtime/watchdog.hpp"

namespace trainsim::cpu {

int64_t Trainer::Impl::rows_per_micro_batch() const {
  const int64_t tokens = plan.micro_batch * model.seq_len / plan.cp;
  return plan.sequence_parallel ? tokens / plan.tp : tokens;
}

double Trainer::Impl::run_schedule(std::vector<MicroBatchState>& mbs, const PipelineSchedule& schedule, int64_t iteration) {
  const float scale = 1.0f / static_cast<float>(plan.global_batch * model.seq_len);
  double loss = 0;
  std::vector<MPI_Request> sends;
  std::vector<Matrix> send_buffers;
  send_buffers.reserve(mbs.size() * 2);
  for (const PipelineStep& step : schedule.steps[static_cast<size_t>(grid.pp_rank)]) {
    MicroBatchState& mb = mbs[static_cast<size_t>(step.micro_batch)];
    // One tag per (micro-batch, chunk, direction): the activation entering chunk c of this stage
    // and the gradient leaving it carry the chunk the receiver runs.
    const int fwd_tag = static_cast<int>((step.micro_batch * grid.chunks + step.chunk) * 2);
    const int from = grid.input_from(step.chunk), to = grid.output_to(step.chunk);
    runtime::note_progress(iteration, step.kind == StepKind::kForward ? runtime::RunPhase::kForward : runtime::RunPhase::kBackward);
    if (step.kind == StepKind::kForward) {
      Matrix input;
      if (from >= 0) input = receive(from, fwd_tag);
      const CommMarks marks = comm_marks();
      double loss_sum = 0;
      ops.backward = false;
      Matrix out = stage->forward(input, mb, *tp, scale, loss_sum, step.chunk);
      close_compute(marks, clock.forward_s);
      memory.sample();  // activations of the micro-batches in flight peak after a forward
      loss += loss_sum * scale;
      if (to >= 0) send(std::move(out), to, next_chunk_tag(step, true), sends, send_buffers);
    } else {
      Matrix grad;
      if (to >= 0) grad = receive(to, fwd_tag + 1);
      data_parallel->begin_backward(step.micro_batch == plan.micro_batches() - 1);
      const CommMarks marks = comm_marks();
      ops.backward = true;
      Matrix dx = stage->backward(grad, mb, *tp, step.chunk);
      close_compute(marks, clock.backward_s);
      if (from >= 0) send(std::move(dx), from, next_chunk_tag(step, false), sends, send_buffers);
    }
  }
  runtime::note_progress(iteration, runtime::RunPhase::kPipelineSends);
  const double start = runtime::wall_s();
  MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  clock.pp_comm_exposed_s += runtime::wall_s() - start;
  return loss;
}

Trainer::Impl::CommMarks Trainer::Impl::comm_marks() const { return {runtime::wall_s(), clock.tp_comm_exposed_s, ep_comm_s, clock.dp_comm_exposed_s}; }

void Trainer::Impl::close_compute(const CommMarks& before, double& phase_s) {
  const double tp_s = clock.tp_comm_exposed_s - before.tp_s, ep_s = ep_comm_s - before.ep_s;
  phase_s += runtime::wall_s() - before.start_s - tp_s - ep_s - (clock.dp_comm_exposed_s - before.dp_s);
  clock.tp_comm_exposed_s += ep_s;
  ops.add(OpCategory::kTpComm, tp_s);
  ops.add(OpCategory::kEpComm, ep_s);
}

// The tag of what `step` sends: forward, the activation for the next virtual stage (chunk + 1 when
// it wraps from the last stage to the first); backward, the gradient for the previous one.
int Trainer::Impl::next_chunk_tag(const PipelineStep& step, bool forward) const {
  int64_t chunk = step.chunk;
  if (forward && grid.pp_rank == plan.pp - 1) ++chunk;
  if (!forward && grid.pp_rank == 0) --chunk;
  return static_cast<int>((step.micro_batch * grid.chunks + chunk) * 2 + (forward ? 0 : 1));
}

// Waiting for a neighbour's message to arrive is the pipeline bubble; receiving it is transfer.
Matrix Trainer::Impl::receive(int from, int tag) {
  Matrix m(rows_per_micro_batch(), model.hidden);
  const double start = runtime::wall_s();
  MPI_Probe(from, tag, grid.world, MPI_STATUS_IGNORE);
  const double arrived = runtime::wall_s();
  MPI_Recv(m.data(), static_cast<int>(m.size()), MPI_FLOAT, from, tag, grid.world, MPI_STATUS_IGNORE);
  clock.bubble_s += arrived - start;
  clock.pp_comm_exposed_s += runtime::wall_s() - arrived;
  return m;
}

void Trainer::Impl::send(Matrix m, int to, int tag, std::vector<MPI_Request>& requests, std::vector<Matrix>& buffers) {
  const double start = runtime::wall_s();
  buffers.push_back(std::move(m));
  requests.emplace_back();
  MPI_Isend(buffers.back().data(), static_cast<int>(buffers.back().size()), MPI_FLOAT, to, tag, grid.world, &requests.back());
  clock.pp_comm_exposed_s += runtime::wall_s() - start;
}

}  // namespace trainsim::cpu
