// The CPU trainer's state and its parts (private to runtime/cpu/trainer*.cpp):
//  - trainer.cpp: set-up, one iteration (step: its phases, page faults and system time) and the run;
//  - trainer_schedule.cpp: the pipeline schedule over this stage's micro-batches, with MPI send /
//    receive between stages, and what each phase's clock counts;
//  - trainer_optimizer.cpp: the optimizer step and the checkpoints (save, load, their timings);
//  - trainer_measurement.cpp: the op categories of an iteration, what rank 0 gathers of every
//    stage's, and the memory peaks over ranks.
#pragma once

#include <mpi.h>

#include <memory>
#include <utility>
#include <vector>

#include "common/measurement.hpp"
#include "kernels/cpu/op_clock.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/pipeline_schedule.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/cpu/cpu_model.hpp"
#include "runtime/cpu/data_parallel.hpp"
#include "runtime/cpu/heap_watermark.hpp"
#include "runtime/cpu/mpi_groups.hpp"
#include "runtime/cpu/trainer.hpp"
#include "runtime/rank_grid.hpp"
#include "runtime/run_options.hpp"

namespace trainsim::cpu {

struct Trainer::Impl {
  ModelSpec model;
  ParallelPlan plan;
  runtime::RunOptions options;
  runtime::RankGrid grid;
  PhaseBreakdown clock;  // this iteration, this rank
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
  // Seconds of each save (between barriers: the slowest rank's write) and this rank's state bytes.
  std::vector<double> save_times_s;
  double checkpoint_bytes = 0;

  Impl(const ModelSpec& m, const ParallelPlan& p, const runtime::RunOptions& o, MPI_Comm world);

  // trainer.cpp
  std::vector<MicroBatchState> micro_batches(int64_t iteration) const;
  IterationRecord step(int64_t iteration, const PipelineSchedule& schedule);

  // trainer_schedule.cpp: returns this rank's share of the loss.
  double run_schedule(std::vector<MicroBatchState>& mbs, const PipelineSchedule& schedule, int64_t iteration);
  // A forward's or backward's compute time is its wall time less the collectives it waited in:
  // TP / CP and EP (the phase figure tp_comm_exposed_s holds both, as predict prices every collective of a
  // layer there; the op categories tell them apart) and DP (overlapped bucket reductions).
  struct CommMarks {
    double start_s, tp_s, ep_s, dp_s;
  };
  CommMarks comm_marks() const;
  void close_compute(const CommMarks& before, double& phase_s);
  int next_chunk_tag(const PipelineStep& step, bool forward) const;
  int64_t rows_per_micro_batch() const;
  Matrix receive(int from, int tag);
  void send(Matrix m, int to, int tag, std::vector<MPI_Request>& requests, std::vector<Matrix>& buffers);

  // trainer_optimizer.cpp
  bool counts_in_norm(const runtime::Param& p) const;
  void optimizer_step();
  runtime::CheckpointHeader header(int64_t iteration) const;
  void save_checkpoint(int64_t iteration);
  int64_t load_checkpoint();  // the latest complete checkpoint's iteration
  void record_checkpoint_times(Measurement& m) const;

  // trainer_measurement.cpp
  OpCategoryTimes finished_op_times() const;
  std::vector<OpCategoryTimes> gather_stage_op_times(const OpCategoryTimes& mine) const;
  void record_memory(Measurement& m) const;
};

}  // namespace trainsim::cpu
