// The CUDA training loop: schedule walk with NCCL send/recv, bucketed DP reduction, ZeRO-1/2/3,
// clipped AdamW, event timing. Streams: `compute` (kernels, GEMMs, TP collectives, the exposed
// reductions), `send` and `recv` (pipeline; each pipeline communicator is used on one of them in
// one order), `reduce` (DP buckets that overlap the backward; ZeRO-3's reduce-scatters), `gather`
// (ZeRO-3's weight all-gathers, one layer ahead). Cross-stream order is by events only.
#include "runtime/cuda/cuda_trainer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "plan/pipeline_schedule.hpp"
#include "runtime/cuda/cuda_device.hpp"
#include "runtime/cuda/cuda_optimizer.hpp"
#include "runtime/cuda/cuda_ring_attention.hpp"
#include "runtime/cuda/cuda_stage.hpp"
#include "runtime/cuda/ep_collectives.hpp"
#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/expert_gradients.hpp"
#include "runtime/cuda/gradient_buckets.hpp"
#include "runtime/cuda/nccl_groups.hpp"
#include "runtime/cuda/zero3_exchange.hpp"
#include "runtime/checkpoint.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "runtime/rank_grid.hpp"
#include "runtime/context_chunks.hpp"
#include "runtime/token_data.hpp"
#include "runtime/watchdog.hpp"

namespace trainsim::cuda {

namespace {

constexpr int64_t kBucketBytes = 25ll << 20;  // PyTorch DDP's default bucket size

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


}  // namespace

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
  Impl(const ModelSpec& m, const ParallelPlan& p, const runtime::RunOptions& o, MPI_Comm world)
      : model(m), plan(p), options(o), grid(runtime::RankGrid::build(p, world, m.tied_embeddings)), device(select_device(grid.world)),
        nccl(NcclGroups::build(grid, p)) {
    report.device = device.name;
  }

  // Allocations (a DeviceError here is agreed between ranks by the caller).
  void setup() {
    gemm = std::make_unique<Gemm>();
    tp = std::make_unique<TpCollectives>(nccl.tp, clock, compute);
    ep = std::make_unique<EpCollectives>(nccl.ep, grid.ep, clock, compute);
    // The simulator's split; MoE: this rank's experts are those of its place in the EP group.
    const runtime::StageLayout layout = runtime::stage_layout(model, plan, grid.pp_rank, grid.tp_rank, grid.cp_rank, grid.ep_rank);
    // ZeRO shards over the dp x cp ranks (nccl.dp spans them, as the CPU runtime's dp_cp group).
    zero3 = plan.zero_stage >= 3 && nccl.dp.size() > 1;
    zero = plan.zero_stage >= 1 && nccl.dp.size() > 1 && !zero3;
    TRAINSIM_ASSERT(plan.ep == 1 || (!zero && !zero3), "check_cuda_plan refuses ZeRO with ep > 1 (expert_gradients.hpp)");
    stage = std::make_unique<CudaStage>(model, layout, plan.attention, plan.micro_batch, options.seed, zero || zero3 ? nccl.dp.size() : 1,
                                        arena, *tp, *gemm, compute, zero3 ? nccl.dp.rank() : -1);
    stage->set_expert_group(*ep);
    if (plan.cp > 1) {
      ring = std::make_unique<CudaRingAttention>(nccl.cp, stage->attention_shape(), arena, clock, compute);
      stage->set_cp_ring(ring.get());
    }
    ParamStore& params = stage->params();
    std::vector<bool> counts;
    for (const ParamView& v : params.views()) {
      const bool replica = counts_in_norm(v, plan.pp, grid.pp_rank, grid.tp_rank);
      counts.push_back(plan.ep > 1 ? counts_in_expert_parallel_norm(v, replica, nccl.dp.rank(), nccl.expert_dp.rank()) : replica);
    }
    if (zero3) {
      optimizer = std::make_unique<CudaOptimizer>(params, counts, arena, compute);
      exchange = std::make_unique<Zero3Exchange>(*stage, Zero3Exchange::Streams{compute, gather, reduce}, nccl.dp_gather, nccl.dp,
                                                 events, clock, arena);
    } else {
      std::pair<int64_t, int64_t> range = params.layout().shard(1, 0);  // [begin, end) this rank updates
      if (zero) {
        range = params.layout().shard(nccl.dp.size(), nccl.dp.rank());
        shard_grads = DeviceBuffer<float>(arena, range.second - range.first, "ZeRO gradient shard");
      }
      optimizer = std::make_unique<CudaOptimizer>(params, range.first, range.second, counts, arena, compute);
    }
    params.drop_initial_values();
    corpus = runtime::load_corpus(options.data_path, model.seq_len + 1);
    tokens = DeviceBuffer<int32_t>(arena, plan.micro_batches() * stage->tokens(), "tokens");
    targets = DeviceBuffer<int32_t>(arena, plan.micro_batches() * stage->tokens(), "targets");
    if (!zero3) reduction = plan_gradient_buckets(params.layout().layer_ranges, params.padded_count(), kBucketBytes);
    // Every activation slot the schedule holds at once, now: running out of memory here is agreed
    // between the ranks, while in the middle of an iteration the others would be waiting for this
    // rank inside NCCL operations.
    const PipelineSchedule schedule = make_pipeline_schedule(plan.schedule, plan.pp, grid.chunks, plan.micro_batches());
    for (int64_t c = 0; c < grid.chunks; ++c) stage->reserve_slots(c, max_in_flight(schedule, grid.pp_rank, c));
  }

  ~Impl() {
    cudaDeviceSynchronize();  // nothing in flight when buffers and communicators go
    grid.release();
  }

  // An error in an iteration cannot be agreed between the ranks: the others may be waiting for this
  // one inside NCCL operations and never reach an MPI call, and unwinding here would hang behind
  // them (cudaDeviceSynchronize in ~Impl, MPI_Finalize in the caller) before any message is out.
  // Alone, the error goes up as usual; with other ranks, this one prints it and ends the job.
  void stop_job_after(const std::exception& e) const {
    if (grid.world_size == 1) return;
    std::cerr << "error: " << e.what() << "\nrank " << grid.world_rank << " stops all " << grid.world_size
              << " ranks (MPI_Abort): the others may be waiting for it inside NCCL operations" << std::endl;
    MPI_Abort(grid.world, 1);
  }

  // This DP rank's share of the iteration's global batch (as the CPU trainer), on the device; with
  // CP, this rank's two chunks of every sequence.
  void upload_batch(int64_t iteration) {
    const int64_t per_rank = plan.global_batch / plan.dp;
    runtime::TokenBatch batch = runtime::token_batch(corpus, options.seed, iteration, grid.dp_rank * per_rank, per_rank, model.seq_len);
    if (plan.cp > 1) batch = context_rows(batch, model.seq_len, runtime::context_positions(model.seq_len, plan.cp, grid.cp_rank));
    check_cuda(cudaMemcpy(tokens.data(), batch.tokens.data(), tokens.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (tokens)");
    check_cuda(cudaMemcpy(targets.data(), batch.targets.data(), targets.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (targets)");
  }

  void launch_bucket(GradientBucket& b) {
    // GPU-CHECK: with overlap this DP all-reduce (reduce stream) runs while the backward's TP
    // collectives run on the compute stream: two communicators' kernels at once on one GPU, enqueued
    // in the same order on every rank. Run tp 2 x dp 2 with overlap under NCCL_DEBUG=WARN and a
    // timeout to see that they co-run (no hang) and that the bucket hides behind the backward.
    events.order(compute, reduce);
    const ParamStore& params = stage->params();  // with ep > 1 the experts' gradients over expert DP
    all_reduce_gradients(params.grads(), params.views(), b.begin, b.end, nccl.dp, plan.ep > 1 ? &nccl.expert_dp : nullptr, reduce);
    b.launched = true;
  }

  // Pipeline messages: to / from the neighbouring stage, or round the ring between the last stage
  // and the first (interleaved: chunk c's output on the last stage is chunk c + 1's input on the
  // first). Each communicator carries one direction, in the same (micro-batch, chunk) order at both
  // ends, since every stage walks the forwards (and the backwards) in the same order. Null where
  // chunk `chunk` of this stage has nothing to receive or send that way.
  enum class Message { kActivationsIn, kActivationsOut, kGradientsIn, kGradientsOut };
  const NcclComm* pipeline_comm(Message message, int64_t chunk) const {
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
  // The peer: in a neighbour pair the lower stage is rank 0; in the ring's wrap pair the first stage.
  static int peer(const NcclComm& comm) { return 1 - comm.rank(); }
  size_t message_count() const { return static_cast<size_t>(stage->rows() * stage->hidden()); }

  // One forward step: a free slot of the chunk, its input received, the forward, its output sent.
  ActivationSlot& forward_step(const PipelineStep& step, float scale) {
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
  void backward_step(const PipelineStep& step, ActivationSlot& s, const std::function<void(int64_t)>& after_layer) {
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

  void run_schedule(const PipelineSchedule& schedule) {
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

  void reduce_gradients() {
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
  void gather_zero_weights() {
    ParamStore& params = stage->params();
    check_nccl(ncclAllGather(params.weights() + optimizer->begin(), params.weights(), static_cast<size_t>(optimizer->count()),
                             ncclBfloat16, nccl.dp.get(), compute),
               "ncclAllGather (ZeRO weights)");
  }

  // Checkpoints (runtime/checkpoint.hpp, backend 1): per rank the optimizer's fp32 master weights
  // and AdamW moments of its range; the bf16 working weights are rebuilt from them on resume.
  runtime::CheckpointHeader header(int64_t iteration) const {
    runtime::CheckpointHeader h = runtime::checkpoint_header(model, plan, grid.world_size, options.seed, 1);
    h.iteration = iteration;
    h.optimizer_step = optimizer->steps_taken();
    return h;
  }

  void save_checkpoint(int64_t iteration) {
    runtime::CheckpointData data;
    data.header = header(iteration);
    data.tensors = optimizer->state_to_host(compute);
    runtime::note_progress(iteration, runtime::RunPhase::kCheckpointSave);
    runtime::save_checkpoint_set(grid.world, options.checkpoint_dir, options.checkpoint_every, data);
  }

  // Loads the latest complete checkpoint; returns its iteration.
  int64_t load_checkpoint() {
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

  void optimizer_step() {
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

  IterationRecord step(int64_t iteration, const PipelineSchedule& schedule) {
    runtime::note_progress(iteration, runtime::RunPhase::kStepStart);
    clock.reset();
    events.reset();
    upload_batch(iteration);
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before the iteration)");
    MPI_Barrier(grid.world);
    runtime::note_progress(iteration, runtime::RunPhase::kDeviceIteration);  // one phase: NCCL's waits are on the device
    const double start = runtime::wall_s();
    check_cuda(cudaMemsetAsync(stage->loss_sum(), 0, sizeof(float), compute), "cudaMemsetAsync (loss)");
    if (zero3) exchange->begin_iteration();
    run_schedule(schedule);
    reduce_gradients();
    optimizer_step();
    float loss_sum = 0;  // the one read-back of the iteration (every other stream has joined compute)
    check_cuda(cudaMemcpyAsync(&loss_sum, stage->loss_sum(), sizeof(float), cudaMemcpyDeviceToHost, compute), "cudaMemcpyAsync (loss)");
    check_cuda(cudaStreamSynchronize(compute), "cudaStreamSynchronize (end of iteration)");
    const double time = runtime::wall_s() - start;
    arena.sample_device();
    const auto s = clock.seconds();
    auto at = [&](SpanKind k) { return s[static_cast<size_t>(k)]; };
    IterationRecord r;
    r.iteration = iteration;
    r.time_s = time;
    r.phases.tp_comm_s = at(SpanKind::kTpInForward) + at(SpanKind::kTpInBackward) + at(SpanKind::kTpOther);
    r.phases.forward_s = std::max(0.0, at(SpanKind::kForward) - at(SpanKind::kTpInForward) - at(SpanKind::kDpInForward));
    r.phases.backward_s = std::max(0.0, at(SpanKind::kBackward) - at(SpanKind::kTpInBackward) - at(SpanKind::kDpInBackward));
    r.phases.dp_comm_s = at(SpanKind::kDpExposed) + at(SpanKind::kDpInForward) + at(SpanKind::kDpInBackward);
    r.phases.pp_comm_s = at(SpanKind::kPpExposed);
    r.phases.optimizer_s = at(SpanKind::kOptimizer);
    // As the CPU trainer: what is left of the wall time is waiting on other stages (and launch gaps).
    const PhaseTimes& c = r.phases;
    r.phases.bubble_s = std::max(0.0, time - c.forward_s - c.backward_s - c.tp_comm_s - c.dp_comm_s - c.pp_comm_s - c.optimizer_s);
    // Loss: the last stage's TP-rank-0 ranks hold their replica's share.
    const float scale = 1.0f / static_cast<float>(plan.global_batch * model.seq_len);
    double mine = stage->layout().head && grid.tp_rank == 0 ? static_cast<double>(loss_sum) * scale : 0.0, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, grid.world);
    r.loss = total;
    return r;
  }
};

CudaTrainer::CudaTrainer(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, MPI_Comm world)
    : impl_(std::make_unique<Impl>(model, plan, options, world)) {
  std::optional<std::string> error;
  try {
    impl_->setup();
  } catch (const DeviceError& e) {  // e.g. out of memory on one rank: every rank stops
    error = e.what();
  }
  agree_on_device_error(impl_->grid.world, error);
}

CudaTrainer::~CudaTrainer() = default;

const DeviceReport& CudaTrainer::device_report() const { return impl_->report; }

Measurement CudaTrainer::run(const std::function<void(const IterationRecord&)>& on_iteration) {
  Impl& t = *impl_;
  const PipelineSchedule schedule = make_pipeline_schedule(t.plan.schedule, t.plan.pp, t.grid.chunks, t.plan.micro_batches());
  Measurement m;
  m.backend = "cuda";
  m.ranks = t.grid.world_size;
  const int64_t first = t.options.resume ? t.load_checkpoint() + 1 : 0;
  m.warmup_iterations = std::min(t.options.warmup_iterations, std::max<int64_t>(0, t.options.steps - first - 1));
  for (int64_t i = first; i < t.options.steps; ++i) {
    try {
      m.iterations.push_back(t.step(i, schedule));
    } catch (const std::exception& e) {
      t.stop_job_after(e);  // returns only when this rank is alone
      throw;
    }
    if (t.grid.world_rank == 0 && on_iteration) on_iteration(m.iterations.back());
    if (t.options.checkpoint_every > 0 && (i + 1) % t.options.checkpoint_every == 0) t.save_checkpoint(i);
  }
  runtime::note_progress(t.options.steps - 1, runtime::RunPhase::kFinish);
  if (m.iterations.empty()) {
    throw InputError("--resume: the checkpoint is already at step " + std::to_string(first) + " of " + std::to_string(t.options.steps),
                     "ask for more --steps");
  }
  summarize_iterations(m);
  // Memory: the largest over ranks of the runtime's own peak (what predict models), the device's
  // view, and the host process's peak resident set (ru_maxrss: KiB).
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double mine[3] = {static_cast<double>(t.arena.peak_bytes()), static_cast<double>(t.arena.device_used_peak_bytes()),
                    static_cast<double>(usage.ru_maxrss) * 1024.0};
  double largest[3] = {0, 0, 0};
  MPI_Allreduce(mine, largest, 3, MPI_DOUBLE, MPI_MAX, t.grid.world);
  m.memory_peak_gib = bytes_to_gib(largest[0]);
  m.memory_rss_peak_gib = bytes_to_gib(largest[2]);
  t.report.runtime_peak_gib = m.memory_peak_gib;
  t.report.device_used_peak_gib = bytes_to_gib(largest[1]);
  t.report.device_total_gib = bytes_to_gib(static_cast<double>(t.arena.device_total_bytes()));
  t.report.activation_slots = t.stage->slots_allocated();
  return m;
}

}  // namespace trainsim::cuda
