// The CPU trainer: set-up, one iteration, the run (its parts: runtime/cpu/trainer_impl.hpp).
#include "runtime/cpu/trainer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <string>

#include "common/errors.hpp"
#include "common/host_allocator.hpp"
#include "runtime/cpu/trainer_impl.hpp"
#include "runtime/token_data.hpp"
#include "runtime/training_loop.hpp"
#include "runtime/watchdog.hpp"

namespace trainsim::cpu {

Trainer::Impl::Impl(const ModelSpec& m, const ParallelPlan& p, const runtime::RunOptions& o, MPI_Comm world) : model(m), plan(p), options(o) {
  keep_freed_memory_in_process();
  grid = runtime::RankGrid::build(plan, world, m.tied_embeddings);
  tp = std::make_unique<MpiTpGroup>(grid.tp, &clock.tp_comm_exposed_s);
  cp = std::make_unique<MpiCpGroup>(grid.cp, &clock.tp_comm_exposed_s);
  ep = std::make_unique<MpiEpGroup>(grid.ep, &ep_comm_s);
  positions = runtime::context_positions(m.seq_len, plan.cp, grid.cp_rank);
  memory.reset();
  stage = std::make_unique<StageModel>(m, runtime::stage_layout(m, plan, grid.pp_rank, grid.tp_rank, grid.cp_rank, grid.ep_rank), options.seed);
  stage->set_cp_group(cp.get());
  stage->set_ep_group(ep.get());
  corpus = runtime::load_corpus(options.data_path, m.seq_len + 1);
  std::vector<bool> weights;
  for (const runtime::Param& prm : stage->params()) weights.push_back(counts_in_norm(prm));
  DataParallelConfig config;
  config.zero_stage = plan.zero_stage;
  config.overlap = plan.dp_overlap;
  config.bucket_params = options.bucket_params;
  // Expert slices (ep 1) differ over the TP group, whole experts (ep > 1) over the EP group.
  const MPI_Comm expert_model = plan.ep > 1 ? grid.ep : grid.tp;
  data_parallel = std::make_unique<DataParallel>(*stage, *tp, DataParallelComms{grid.dp_cp, grid.expert_dp, expert_model, grid.model, grid.embedding},
                                                 config, weights, clock);
  memory.sample();
}

// This DP rank's share of the iteration's global batch, split into micro-batches; with CP, this
// rank's two chunks of every sequence.
std::vector<MicroBatchState> Trainer::Impl::micro_batches(int64_t iteration) const {
  const int64_t per_rank = plan.global_batch / plan.dp;
  std::vector<MicroBatchState> out(static_cast<size_t>(plan.micro_batches()));
  for (int64_t k = 0; k < plan.micro_batches(); ++k) {
    MicroBatchState& mb = out[static_cast<size_t>(k)];
    mb.batch = plan.micro_batch;
    runtime::TokenBatch batch = runtime::token_batch(corpus, options.seed, iteration, grid.dp_rank * per_rank + k * plan.micro_batch,
                                                     plan.micro_batch, model.seq_len);
    for (int64_t j = 0; j < plan.micro_batch; ++j) {
      for (int32_t p : positions) {
        mb.tokens.push_back(batch.tokens[static_cast<size_t>(j * model.seq_len + p)]);
        mb.targets.push_back(batch.targets[static_cast<size_t>(j * model.seq_len + p)]);
      }
    }
  }
  return out;
}

IterationRecord Trainer::Impl::step(int64_t iteration, const PipelineSchedule& schedule) {
  clock = PhaseBreakdown{};
  ep_comm_s = 0;
  ops = OpClock{};
  std::vector<MicroBatchState> mbs = micro_batches(iteration);
  runtime::note_progress(iteration, runtime::RunPhase::kStepStart);
  MPI_Barrier(grid.world);
  rusage usage_before{};
  getrusage(RUSAGE_SELF, &usage_before);
  current_op_clock() = &ops;
  const double start = runtime::wall_s();
  data_parallel->begin_iteration();
  const double loss = run_schedule(mbs, schedule, iteration);
  runtime::note_progress(iteration, runtime::RunPhase::kOptimizer);
  optimizer_step();
  memory.sample();
  const double time = runtime::wall_s() - start;
  current_op_clock() = nullptr;
  rusage usage_after{};
  getrusage(RUSAGE_SELF, &usage_after);
  // Loss: the last stage's TP-rank-0 ranks hold their replica's share (with CP, of their chunks'
  // tokens: the sum over all of them is the global batch's, every token once).
  double mine = grid.pp_rank == plan.pp - 1 && grid.tp_rank == 0 ? loss : 0.0, total = 0;
  runtime::note_progress(iteration, runtime::RunPhase::kLossAllReduce);
  MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, grid.world);
  IterationRecord r;
  r.iteration = iteration;
  r.loss = total;
  r.time_s = time;
  r.phases = clock;
  r.phases.close(time);  // compute = forward + backward; the bubble: what the wall time leaves
  r.ops = finished_op_times();
  r.page_faults = (usage_after.ru_minflt + usage_after.ru_majflt) - (usage_before.ru_minflt + usage_before.ru_majflt);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  r.system_s = seconds(usage_after.ru_stime) - seconds(usage_before.ru_stime);
  return r;
}

Trainer::Trainer(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, MPI_Comm world)
    : impl_(std::make_unique<Impl>(model, plan, options, world)) {}

Trainer::~Trainer() { impl_->grid.release(); }

Measurement Trainer::run(const std::function<void(const IterationRecord&)>& on_iteration) {
  Impl& t = *impl_;
  const PipelineSchedule schedule = make_pipeline_schedule(t.plan.schedule, t.plan.pp, t.grid.chunks, t.plan.micro_batches());
  Measurement m;
  m.ranks = t.grid.world_size;
  MPI_Barrier(t.grid.world);
  const double load_start = runtime::wall_s();
  const int64_t first = t.options.resume ? t.load_checkpoint() + 1 : 0;
  MPI_Barrier(t.grid.world);
  if (t.options.resume) m.checkpoint_load_s = runtime::wall_s() - load_start;
  runtime::TrainingSteps steps;
  steps.step = [&](int64_t i) { return t.step(i, schedule); };
  steps.save_checkpoint = [&](int64_t i) { t.save_checkpoint(i); };
  steps.stop_job_after = [&](const std::exception& e) {  // this rank alone: the others would wait for it in a collective
    if (t.grid.world_size > 1) {
      runtime::abort_job(t.grid.world, "error: " + std::string(e.what()) + "\nrank " + std::to_string(t.grid.world_rank) + " stops all " +
                                           std::to_string(t.grid.world_size) + " ranks (MPI_Abort): the others may be waiting for it");
    }
  };
  runtime::run_iterations(t.options, t.grid, first, steps, on_iteration, m);
  m.op_categories = t.gather_stage_op_times(median_op_categories(m.iterations, m.warmup_iterations));
  t.record_memory(m);
  t.record_checkpoint_times(m);
  return m;
}

}  // namespace trainsim::cpu
