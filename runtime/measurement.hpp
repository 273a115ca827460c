// What `trainsim run` measures (`trainsim.measurement`, written by rank 0): per iteration the loss,
// wall time and per-phase seconds, the median iteration time over the timed iterations, peak
// memory (largest over ranks), and a breakdown with the same keys as `predict`, so `compare` can
// line them up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

// Seconds one rank spent per phase in one iteration (the critical rank is reported).
struct PhaseTimes {
  double forward_s = 0;
  double backward_s = 0;    // includes recomputation
  double tp_comm_s = 0;     // TP / SP collectives
  double dp_comm_s = 0;     // DP / ZeRO collectives not hidden
  double pp_comm_s = 0;     // pipeline send/recv
  double bubble_s = 0;      // waiting on other stages
  double optimizer_s = 0;
};

struct IterationRecord {
  int64_t iteration = 0;
  double loss = 0;
  double time_s = 0;
  PhaseTimes phases;
};

struct Measurement {
  std::vector<IterationRecord> iterations;
  int64_t warmup_iterations = 1;   // excluded from the median
  double iteration_time_s = 0;     // median over the timed iterations
  double memory_peak_gib = 0;      // largest over ranks of the runtime's own peak (tensors, buffers)
  double memory_rss_peak_gib = 0;  // largest over ranks of the process's peak resident set
  PhaseTimes breakdown;            // median per phase over the timed iterations
  int64_t ranks = 1;
  std::string backend = "cpu";
};

// Fills iteration_time_s and breakdown: medians over the iterations after warmup_iterations.
void summarize_iterations(Measurement& m);

}  // namespace trainsim
