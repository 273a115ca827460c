// runtime/training_loop.hpp: the iterations around a backend's step, checkpoint and error handling.
#include "runtime/training_loop.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <string>

#include "common/errors.hpp"
#include "runtime/watchdog.hpp"

namespace trainsim::runtime {

void run_iterations(const RunOptions& options, const RankGrid& grid, int64_t first, const TrainingSteps& steps,
                    const std::function<void(const IterationRecord&)>& on_iteration, Measurement& m) {
  m.warmup_iterations = std::min(options.warmup_iterations, std::max<int64_t>(0, options.steps - first - 1));
  for (int64_t i = first; i < options.steps; ++i) {
    try {
      m.iterations.push_back(steps.step(i));
    } catch (const std::exception& e) {
      steps.stop_job_after(e);  // returns only when this rank is alone
      throw;
    }
    if (grid.world_rank == 0 && on_iteration) on_iteration(m.iterations.back());
    if (options.checkpoint_every > 0 && (i + 1) % options.checkpoint_every == 0) steps.save_checkpoint(i);
  }
  note_progress(options.steps - 1, RunPhase::kFinish);
  if (m.iterations.empty()) {
    throw InputError("--resume: the checkpoint is already at step " + std::to_string(first) + " of " + std::to_string(options.steps),
                     "ask for more --steps");
  }
  summarize_iterations(m);
}

std::vector<double> largest_over_ranks(MPI_Comm world, std::vector<double> values) {
  std::vector<double> largest(values.size(), 0.0);
  MPI_Allreduce(values.data(), largest.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX, world);
  return largest;
}

double peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // ru_maxrss: KiB
}

}  // namespace trainsim::runtime
