// The loop both trainers run around their iterations: resume from the latest checkpoint, iterate
// to --steps with the checkpoint cadence, stop every rank when one fails inside an iteration, then
// the medians over the timed iterations; and the largest figure over ranks, which both use for
// memory. The backends give the iteration, the save and the load; nothing here touches a device.
#pragma once

#include <mpi.h>

#include <exception>
#include <functional>
#include <vector>

#include "common/measurement.hpp"
#include "runtime/rank_grid.hpp"
#include "runtime/run_options.hpp"

namespace trainsim::runtime {

struct TrainingSteps {
  std::function<IterationRecord(int64_t iteration)> step;
  std::function<void(int64_t iteration)> save_checkpoint;  // after iteration `iteration`, every checkpoint_every
  // An exception left an iteration on this rank: with other ranks (which may be waiting for it in a
  // collective) this stops the job and does not return; alone it returns and the error goes up.
  std::function<void(const std::exception&)> stop_job_after;
};

// Iterations `first` .. options.steps - 1 into `m` (rank 0 calls `on_iteration` after each), then
// summarize_iterations. `m.warmup_iterations` becomes options.warmup_iterations, at most all but
// the last iteration run. Throws InputError when a resumed run has no step left.
void run_iterations(const RunOptions& options, const RankGrid& grid, int64_t first, const TrainingSteps& steps,
                    const std::function<void(const IterationRecord&)>& on_iteration, Measurement& m);

// The largest of each value over the ranks of `world` (collective).
std::vector<double> largest_over_ranks(MPI_Comm world, std::vector<double> values);

// The process's peak resident set in bytes (getrusage's ru_maxrss).
double peak_resident_bytes();

}  // namespace trainsim::runtime
