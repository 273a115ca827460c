// The training loop: data, pipeline schedule with MPI send/recv, DP reduction, AdamW.
#include "runtime/cpu/trainer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "plan/pipeline_schedule.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/cpu/cpu_model.hpp"
#include "runtime/cpu/mpi_groups.hpp"
#include "runtime/cpu/data_parallel.hpp"
#include "runtime/cpu/heap_watermark.hpp"
#include "common/host_allocator.hpp"
#include "kernels/cpu/op_clock.hpp"
#include "runtime/cpu/ring_attention.hpp"
#include "runtime/token_data.hpp"
#include "runtime/watchdog.hpp"

namespace trainsim::cpu {

struct Trainer::Impl {
  ModelSpec model;
  ParallelPlan plan;
  runtime::RunOptions options;
  runtime::RankGrid grid;
  PhaseTimes clock;  // this iteration, this rank
  OpClock ops;       // this iteration, this rank: seconds per op category
  std::unique_ptr<MpiTpGroup> tp;
  std::unique_ptr<MpiCpGroup> cp;  // the ring attention's transfers count as TP/CP communication
  std::unique_ptr<MpiEpGroup> ep;  // MoE all-to-alls: ep_comm_s, reported in the TP phase and as op category ep_comm
  double ep_comm_s = 0;            // this iteration, this rank
  std::vector<int32_t> positions;  // of the seq / cp tokens of each sequence this CP rank holds
  std::unique_ptr<StageModel> stage;
  std::vector<uint8_t> corpus;
  int64_t adam_step = 0;
  std::unique_ptr<DataParallel> data_parallel;  // DP reduction, ZeRO, AdamW
  HeapWatermark memory;

  Impl(const ModelSpec& m, const ParallelPlan& p, const runtime::RunOptions& o, MPI_Comm world) : model(m), plan(p), options(o) {
    keep_freed_memory_in_process();
    grid = runtime::RankGrid::build(plan, world, m.tied_embeddings);
    tp = std::make_unique<MpiTpGroup>(grid.tp, &clock.tp_comm_s);
    cp = std::make_unique<MpiCpGroup>(grid.cp, &clock.tp_comm_s);
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
  std::vector<MicroBatchState> micro_batches(int64_t iteration) const {
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

  int64_t rows_per_micro_batch() const {
    const int64_t tokens = plan.micro_batch * model.seq_len / plan.cp;
    return plan.sequence_parallel ? tokens / plan.tp : tokens;
  }

  double run_schedule(std::vector<MicroBatchState>& mbs, const PipelineSchedule& schedule, int64_t iteration) {
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
    clock.pp_comm_s += runtime::wall_s() - start;
    return loss;
  }

  // A forward's or backward's compute time is its wall time less the collectives it waited in:
  // TP / CP and EP (the phase figure tp_comm_s holds both, as predict prices every collective of a
  // layer there; the op categories tell them apart) and DP (overlapped bucket reductions).
  struct CommMarks {
    double start_s, tp_s, ep_s, dp_s;
  };
  CommMarks comm_marks() const { return {runtime::wall_s(), clock.tp_comm_s, ep_comm_s, clock.dp_comm_s}; }
  void close_compute(const CommMarks& before, double& phase_s) {
    const double tp_s = clock.tp_comm_s - before.tp_s, ep_s = ep_comm_s - before.ep_s;
    phase_s += runtime::wall_s() - before.start_s - tp_s - ep_s - (clock.dp_comm_s - before.dp_s);
    clock.tp_comm_s += ep_s;
    ops.add(OpCategory::kTpComm, tp_s);
    ops.add(OpCategory::kEpComm, ep_s);
  }

  // The tag of what `step` sends: forward, the activation for the next virtual stage (chunk + 1 when
  // it wraps from the last stage to the first); backward, the gradient for the previous one.
  int next_chunk_tag(const PipelineStep& step, bool forward) const {
    int64_t chunk = step.chunk;
    if (forward && grid.pp_rank == plan.pp - 1) ++chunk;
    if (!forward && grid.pp_rank == 0) --chunk;
    return static_cast<int>((step.micro_batch * grid.chunks + chunk) * 2 + (forward ? 0 : 1));
  }

  // Waiting for a neighbour's message to arrive is the pipeline bubble; receiving it is transfer.
  Matrix receive(int from, int tag) {
    Matrix m(rows_per_micro_batch(), model.hidden);
    const double start = runtime::wall_s();
    MPI_Probe(from, tag, grid.world, MPI_STATUS_IGNORE);
    const double arrived = runtime::wall_s();
    MPI_Recv(m.data(), static_cast<int>(m.size()), MPI_FLOAT, from, tag, grid.world, MPI_STATUS_IGNORE);
    clock.bubble_s += arrived - start;
    clock.pp_comm_s += runtime::wall_s() - arrived;
    return m;
  }

  void send(Matrix m, int to, int tag, std::vector<MPI_Request>& requests, std::vector<Matrix>& buffers) {
    const double start = runtime::wall_s();
    buffers.push_back(std::move(m));
    requests.emplace_back();
    MPI_Isend(buffers.back().data(), static_cast<int>(buffers.back().size()), MPI_FLOAT, to, tag, grid.world, &requests.back());
    clock.pp_comm_s += runtime::wall_s() - start;
  }

  bool counts_in_norm(const runtime::Param& p) const {
    // Each TP-split slice once per rank, replicated parameters once per replica, the tied
    // embedding once (on the first stage); whole experts (ep > 1) on every rank, which holds its own
    // (DataParallel::global_norm counts each EP group's once).
    const bool duplicate_embedding = p.name == "wte" && plan.pp > 1 && grid.pp_rank != 0;
    return (p.tp_split || grid.tp_rank == 0 || (p.expert && plan.ep > 1)) && !duplicate_embedding;
  }

  void optimizer_step() {
    AdamSettings adam;
    adam.lr = static_cast<float>(options.learning_rate);
    adam.grad_clip = options.grad_clip;
    const double start = runtime::wall_s(), dp_before = clock.dp_comm_s, tp_before = clock.tp_comm_s;
    data_parallel->step(adam, ++adam_step);
    clock.optimizer_s += runtime::wall_s() - start - (clock.dp_comm_s - dp_before) - (clock.tp_comm_s - tp_before);
  }

  runtime::CheckpointHeader header(int64_t iteration) const {
    runtime::CheckpointHeader h = runtime::checkpoint_header(model, plan, grid.world_size, options.seed, 0);
    h.iteration = iteration;
    h.optimizer_step = adam_step;
    return h;
  }

  // Parameters (or ZeRO-3 shards), then optimizer states, in a fixed order.
  std::vector<std::pair<float*, size_t>> state_tensors() { return data_parallel->state_tensors(); }

  // Seconds of each save (between barriers: the slowest rank's write) and this rank's state bytes.
  std::vector<double> save_times_s;
  double checkpoint_bytes = 0;

  void save_checkpoint(int64_t iteration) {
    runtime::note_progress(iteration, runtime::RunPhase::kCheckpointSave);
    MPI_Barrier(grid.world);
    const double start = runtime::wall_s();
    runtime::CheckpointData data;
    data.header = header(iteration);
    checkpoint_bytes = 0;
    for (const auto& [ptr, n] : state_tensors()) {
      data.tensors.emplace_back(ptr, ptr + n);
      checkpoint_bytes += static_cast<double>(n * sizeof(float));
    }
    runtime::save_checkpoint_set(grid.world, options.checkpoint_dir, options.checkpoint_every, data);
    MPI_Barrier(grid.world);
    save_times_s.push_back(runtime::wall_s() - start);
  }

  // The median save after the first (which grows the heap: first-touch page faults a long run
  // pays once) and the largest rank's checkpoint bytes (collective).
  void record_checkpoint_times(Measurement& m) const {
    m.checkpoint_saves = static_cast<int64_t>(save_times_s.size());
    if (!save_times_s.empty()) {
      std::vector<double> sorted(save_times_s.begin() + (save_times_s.size() > 1 ? 1 : 0), save_times_s.end());
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
      m.checkpoint_save_s = sorted[sorted.size() / 2];
    }
    double mine = checkpoint_bytes;
    MPI_Allreduce(&mine, &m.checkpoint_bytes_per_rank, 1, MPI_DOUBLE, MPI_MAX, grid.world);
  }

  // Loads the latest complete checkpoint; returns its iteration.
  int64_t load_checkpoint() {
    std::vector<std::pair<float*, size_t>> tensors = state_tensors();
    std::vector<size_t> sizes;
    for (const auto& t : tensors) sizes.push_back(t.second);
    runtime::note_progress(-1, runtime::RunPhase::kCheckpointLoad);
    const auto tell = [&](const std::string& note) {
      if (grid.world_rank == 0 && options.notify) options.notify(note);
    };
    const runtime::CheckpointData data = options.resume_from_last_good
                                    ? runtime::load_checkpoint_set(grid.world, options.checkpoint_dir, header(0), sizes, tell)
                                    : runtime::load_checkpoint_set(grid.world, options.checkpoint_dir, header(0), sizes);
    for (size_t i = 0; i < tensors.size(); ++i) std::copy(data.tensors[i].begin(), data.tensors[i].end(), tensors[i].first);
    adam_step = data.header.optimizer_step;
    return data.header.iteration;
  }

  // The op clock's totals for the iteration: the optimizer phase, and each compute phase's time
  // outside every timed op as "other".
  OpCategoryTimes finished_op_times() const {
    OpCategoryTimes t = ops.seconds;
    const auto other = [](const std::array<double, kOpCategoryCount>& column, double phase_s) {
      double timed = 0;
      for (size_t c = 0; c < kOpCategoryCount; ++c) {
        if (c != static_cast<size_t>(OpCategory::kTpComm) && c != static_cast<size_t>(OpCategory::kEpComm)) timed += column[c];
      }
      return std::max(0.0, phase_s - timed);
    };
    t.forward_s[static_cast<size_t>(OpCategory::kOther)] = other(t.forward_s, clock.forward_s);
    t.backward_s[static_cast<size_t>(OpCategory::kOther)] = other(t.backward_s, clock.backward_s);
    t.forward_s[static_cast<size_t>(OpCategory::kOptimizer)] = clock.optimizer_s;
    return t;
  }

  IterationRecord step(int64_t iteration, const PipelineSchedule& schedule) {
    clock = PhaseTimes{};
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
    r.phases.bubble_s = std::max(0.0, time - clock.forward_s - clock.backward_s - clock.tp_comm_s - clock.dp_comm_s -
                                          clock.pp_comm_s - clock.optimizer_s);
    r.ops = finished_op_times();
    r.page_faults = (usage_after.ru_minflt + usage_after.ru_majflt) - (usage_before.ru_minflt + usage_before.ru_majflt);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
    r.system_s = seconds(usage_after.ru_stime) - seconds(usage_before.ru_stime);
    return r;
  }

  // Rank 0 learns each pipeline stage's per-op-category medians (from TP rank 0, CP rank 0 of DP replica 0).
  std::vector<OpCategoryTimes> gather_stage_op_times(const OpCategoryTimes& mine) const {
    constexpr size_t kWidth = 2 * kOpCategoryCount + 2;
    std::vector<double> row(kWidth);
    std::copy(mine.forward_s.begin(), mine.forward_s.end(), row.begin());
    std::copy(mine.backward_s.begin(), mine.backward_s.end(), row.begin() + kOpCategoryCount);
    row[kWidth - 2] = static_cast<double>(grid.pp_rank);
    row[kWidth - 1] = grid.tp_rank == 0 && grid.cp_rank == 0 && grid.dp_rank == 0 ? 1.0 : 0.0;
    std::vector<double> all(grid.world_rank == 0 ? kWidth * static_cast<size_t>(grid.world_size) : 0);
    MPI_Gather(row.data(), static_cast<int>(kWidth), MPI_DOUBLE, all.data(), static_cast<int>(kWidth), MPI_DOUBLE, 0, grid.world);
    std::vector<OpCategoryTimes> stages(static_cast<size_t>(plan.pp));
    for (size_t r = 0; grid.world_rank == 0 && r < static_cast<size_t>(grid.world_size); ++r) {
      const double* from = all.data() + r * kWidth;
      if (from[kWidth - 1] == 0.0) continue;
      OpCategoryTimes& t = stages[static_cast<size_t>(from[kWidth - 2])];
      std::copy(from, from + kOpCategoryCount, t.forward_s.begin());
      std::copy(from + kOpCategoryCount, from + 2 * kOpCategoryCount, t.backward_s.begin());
    }
    return stages;
  }
};

Trainer::Trainer(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, MPI_Comm world)
    : impl_(std::make_unique<Impl>(model, plan, options, world)) {}

Trainer::~Trainer() { impl_->grid.release(); }

Measurement Trainer::run(const std::function<void(const IterationRecord&)>& on_iteration) {
  Impl& t = *impl_;
  const PipelineSchedule schedule = make_pipeline_schedule(t.plan.schedule, t.plan.pp, t.grid.chunks, t.plan.micro_batches());
  Measurement m;
  m.warmup_iterations = std::min(t.options.warmup_iterations, std::max<int64_t>(0, t.options.steps - 1));
  m.ranks = t.grid.world_size;
  MPI_Barrier(t.grid.world);
  const double load_start = runtime::wall_s();
  const int64_t first = t.options.resume ? t.load_checkpoint() + 1 : 0;
  MPI_Barrier(t.grid.world);
  if (t.options.resume) m.checkpoint_load_s = runtime::wall_s() - load_start;
  m.warmup_iterations = std::min(m.warmup_iterations, std::max<int64_t>(0, t.options.steps - first - 1));
  for (int64_t i = first; i < t.options.steps; ++i) {
    try {
      m.iterations.push_back(t.step(i, schedule));
    } catch (const std::exception& e) {  // this rank alone: the others would wait for it in a collective
      if (t.grid.world_size > 1) {
        runtime::abort_job(t.grid.world, "error: " + std::string(e.what()) + "\nrank " + std::to_string(t.grid.world_rank) + " stops all " +
                                    std::to_string(t.grid.world_size) + " ranks (MPI_Abort): the others may be waiting for it");
      }
      throw;
    }
    if (t.grid.world_rank == 0 && on_iteration) on_iteration(m.iterations.back());
    if (t.options.checkpoint_every > 0 && (i + 1) % t.options.checkpoint_every == 0) t.save_checkpoint(i);
  }
  runtime::note_progress(t.options.steps - 1, runtime::RunPhase::kFinish);
  if (m.iterations.empty()) throw InputError("--resume: the checkpoint is already at step " + std::to_string(first) + " of " + std::to_string(t.options.steps), "ask for more --steps");
  summarize_iterations(m);
  m.op_categories = t.gather_stage_op_times(median_op_categories(m.iterations, m.warmup_iterations));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double peaks[2] = {static_cast<double>(t.memory.peak_bytes()), static_cast<double>(usage.ru_maxrss) * 1024.0};  // ru_maxrss: KiB
  double largest[2] = {0, 0};
  MPI_Allreduce(peaks, largest, 2, MPI_DOUBLE, MPI_MAX, t.grid.world);
  m.memory_peak_gib = bytes_to_gib(largest[0]);
  t.record_checkpoint_times(m);
  m.memory_rss_peak_gib = bytes_to_gib(largest[1]);
  return m;
}

}  // namespace trainsim::cpu
