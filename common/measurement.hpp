// What `trainsim run` measures (`trainsim.measurement`, written by rank 0): per iteration the loss,
// wall time and per-phase seconds, the median iteration time over the timed iterations, peak
// memory (largest over ranks), and a breakdown with the same keys as `predict`, so `compare` can
// line them up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/op_category.hpp"
#include "common/phase_breakdown.hpp"

namespace trainsim {

struct IterationRecord {
  int64_t iteration = 0;
  double loss = 0;
  double time_s = 0;
  PhaseBreakdown phases;     // this rank's (the critical rank is reported)
  OpCategoryTimes ops;       // this rank's per-op-category seconds (compute phases + optimizer)
  int64_t page_faults = 0;   // minor + major page faults of this rank during the iteration
  double system_s = 0;       // kernel CPU time of this rank during the iteration (faults, MPI, ...)
};

struct Measurement {
  std::vector<IterationRecord> iterations;
  int64_t warmup_iterations = 1;   // excluded from the median
  double iteration_time_s = 0;     // median over the timed iterations
  double memory_peak_gib = 0;      // largest over ranks of the runtime's own peak (tensors, buffers)
  double memory_rss_peak_gib = 0;  // largest over ranks of the process's peak resident set
  PhaseBreakdown breakdown;        // median per phase over the timed iterations (compute_s: forward + backward of the medians)
  // Per pipeline stage (TP rank 0 of DP replica 0 stands for it): median seconds per op category
  // over the timed iterations. Empty in files written before the runtime timed its ops.
  std::vector<OpCategoryTimes> op_categories;
  double page_faults_per_iteration = 0;  // rank 0, median over the timed iterations
  double system_s_per_iteration = 0;     // rank 0, median
  int64_t ranks = 1;
  std::string backend = "cpu";
  // Checkpoints (run --checkpoint-every / --resume): wall seconds from the barrier before the first
  // rank writes (reads) to the barrier after the last; save: median over the saves after the first
  // (the first grows the heap); load: the one load of --resume (a fresh process, as a restart is).
  int64_t checkpoint_saves = 0;
  double checkpoint_save_s = 0, checkpoint_load_s = 0;
  double checkpoint_bytes_per_rank = 0;  // the largest rank's file
};

// Fills iteration_time_s, breakdown, page_faults_per_iteration and system_s_per_iteration: medians
// over the iterations after warmup_iterations (of the records in m.iterations: rank 0's).
void summarize_iterations(Measurement& m);
// Median per entry over the timed iterations of `records` (one rank's).
OpCategoryTimes median_op_categories(const std::vector<IterationRecord>& records, int64_t warmup_iterations);

}  // namespace trainsim
