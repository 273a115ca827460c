// The CUDA trainer (its parts: runtime/cuda/cuda_trainer_impl.hpp): schedule walk with NCCL send/recv, bucketed DP reduction, ZeRO-1/2/3,
// clipped AdamW, event timing. Streams: `compute` (kernels, GEMMs, TP collectives, the exposed
// reductions), `send` and `recv` (pipeline; each pipeline communicator is used on one of them in
// one order), `reduce` (DP buckets that overlap the backward; ZeRO-3's reduce-scatters), `gather`
// (ZeRO-3's weight all-gathers, one layer ahead). Cross-stream order is by events only.
#include "runtime/cuda/cuda_trainer_impl.hpp"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "runtime/context_chunks.hpp"
#include "runtime/token_data.hpp"
#include "runtime/training_loop.hpp"
#include "runtime/watchdog.hpp"

namespace trainsim::cuda {

CudaTrainer::Impl::Impl(const ModelSpec& m, const ParallelPlan& p, const runtime::RunOptions& o, MPI_Comm world)
    : model(m), plan(p), options(o), grid(runtime::RankGrid::build(p, world, m.tied_embeddings)), device(select_device(grid.world)),
      nccl(NcclGroups::build(grid, p)) {
  report.device = device.name;
}

// Allocations (a DeviceError here is agreed between ranks by the caller).
void CudaTrainer::Impl::setup() {
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

CudaTrainer::Impl::~Impl() {
  cudaDeviceSynchronize();  // nothing in flight when buffers and communicators go
  grid.release();
}

// An error in an iteration cannot be agreed between the ranks: the others may be waiting for this
// one inside NCCL operations and never reach an MPI call, and unwinding here would hang behind
// them (cudaDeviceSynchronize in ~Impl, MPI_Finalize in the caller) before any message is out.
// Alone, the error goes up as usual; with other ranks, this one prints it and ends the job.
void CudaTrainer::Impl::stop_job_after(const std::exception& e) const {
  if (grid.world_size == 1) return;
  std::cerr << "error: " << e.what() << "\nrank " << grid.world_rank << " stops all " << grid.world_size
            << " ranks (MPI_Abort): the others may be waiting for it inside NCCL operations" << std::endl;
  MPI_Abort(grid.world, 1);
}

// This DP rank's share of the iteration's global batch (as the CPU trainer), on the device; with
// CP, this rank's two chunks of every sequence.
void CudaTrainer::Impl::upload_batch(int64_t iteration) {
  const int64_t per_rank = plan.global_batch / plan.dp;
  runtime::TokenBatch batch = runtime::token_batch(corpus, options.seed, iteration, grid.dp_rank * per_rank, per_rank, model.seq_len);
  if (plan.cp > 1) batch = context_rows(batch, model.seq_len, runtime::context_positions(model.seq_len, plan.cp, grid.cp_rank));
  check_cuda(cudaMemcpy(tokens.data(), batch.tokens.data(), tokens.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (tokens)");
  check_cuda(cudaMemcpy(targets.data(), batch.targets.data(), targets.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (targets)");
}

IterationRecord CudaTrainer::Impl::step(int64_t iteration, const PipelineSchedule& schedule) {
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
  r.phases.tp_comm_exposed_s = at(SpanKind::kTpInForward) + at(SpanKind::kTpInBackward) + at(SpanKind::kTpOther);
  r.phases.forward_s = std::max(0.0, at(SpanKind::kForward) - at(SpanKind::kTpInForward) - at(SpanKind::kDpInForward));
  r.phases.backward_s = std::max(0.0, at(SpanKind::kBackward) - at(SpanKind::kTpInBackward) - at(SpanKind::kDpInBackward));
  r.phases.dp_comm_exposed_s = at(SpanKind::kDpExposed) + at(SpanKind::kDpInForward) + at(SpanKind::kDpInBackward);
  r.phases.pp_comm_exposed_s = at(SpanKind::kPpExposed);
  r.phases.optimizer_s = at(SpanKind::kOptimizer);
  r.phases.close(time);  // as the CPU trainer: what is left of the wall time is waiting on other stages (and launch gaps)
  // Loss: the last stage's TP-rank-0 ranks hold their replica's share.
  const float scale = 1.0f / static_cast<float>(plan.global_batch * model.seq_len);
  double mine = stage->layout().head && grid.tp_rank == 0 ? static_cast<double>(loss_sum) * scale : 0.0, total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, grid.world);
  r.loss = total;
  return r;
}

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

nlohmann::ordered_json device_report_json(const DeviceReport& d) {
  return {{"device", d.device},
          {"memory_peak_gib_is", "largest over ranks of the CUDA runtime's own device allocations at their peak (bf16 weights, "
                                 "fp32 gradients, master weights and AdamW states, activations, workspaces); not the CUDA "
                                 "context, NCCL or cuBLASLt buffers"},
          {"device_used_peak_gib", d.device_used_peak_gib},
          {"device_used_peak_gib_is", "largest over ranks of cudaMemGetInfo total - free after each iteration (everything on "
                                      "the GPU, other processes included)"},
          {"device_total_gib", d.device_total_gib},
          {"activation_slots_rank0", d.activation_slots}};
}

Measurement CudaTrainer::run(const std::function<void(const IterationRecord&)>& on_iteration) {
  Impl& t = *impl_;
  const PipelineSchedule schedule = make_pipeline_schedule(t.plan.schedule, t.plan.pp, t.grid.chunks, t.plan.micro_batches());
  Measurement m;
  m.backend = "cuda";
  m.ranks = t.grid.world_size;
  const int64_t first = t.options.resume ? t.load_checkpoint() + 1 : 0;
  runtime::TrainingSteps steps;
  steps.step = [&](int64_t i) { return t.step(i, schedule); };
  steps.save_checkpoint = [&](int64_t i) { t.save_checkpoint(i); };
  steps.stop_job_after = [&](const std::exception& e) { t.stop_job_after(e); };
  runtime::run_iterations(t.options, t.grid, first, steps, on_iteration, m);
  // Memory: the largest over ranks of the runtime's own peak (what predict models), the device's
  // view, and the host process's peak resident set.
  const std::vector<double> largest = runtime::largest_over_ranks(
      t.grid.world, {static_cast<double>(t.arena.peak_bytes()), static_cast<double>(t.arena.device_used_peak_bytes()), runtime::peak_resident_bytes()});
  m.memory_peak_gib = bytes_to_gib(largest[0]);
  m.memory_rss_peak_gib = bytes_to_gib(largest[2]);
  t.report.runtime_peak_gib = m.memory_peak_gib;
  t.report.device_used_peak_gib = bytes_to_gib(largest[1]);
  t.report.device_total_gib = bytes_to_gib(static_cast<double>(t.arena.device_total_bytes()));
  t.report.activation_slots = t.stage->slots_allocated();
  return m;
}

}  // namespace trainsim::cuda
