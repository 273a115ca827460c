// `trainsim run`'s backends: the plan checks, the watchdog and the trainer of the CPU backend
// (runtime/cpu) or the CUDA one (runtime/cuda, in the CUDA module loaded on this first use:
// cli/cuda_module_loader.hpp); progress lines on stderr.
#include "cli/run_backend.hpp"

#include <mpi.h>

#include <iostream>

#include "cli/cuda_module_loader.hpp"
#include "reports/text_table.hpp"
#include "runtime/cpu/trainer.hpp"
#include "runtime/watchdog.hpp"

namespace trainsim {

Measurement train_on_backend(const std::string& backend, const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options,
                             int world_size, double collective_timeout_s, nlohmann::ordered_json& device) {
  const auto print = [&](const IterationRecord& r) {
    std::cerr << "step " << r.iteration + 1 << "/" << options.steps << "  loss " << format_fixed(r.loss, 4) << "  "
              << format_fixed(r.time_s, 3) << " s\n";
  };
  // Every rank stops the job when it makes no progress for the timeout (runtime/watchdog.hpp).
  const runtime::Watchdog watchdog(MPI_COMM_WORLD, collective_timeout_s);
  if (backend == "cuda") return train_with_cuda_module(model, plan, options, world_size, print, device);
  cpu::check_runtime_plan(model, plan, world_size);
  cpu::check_host_memory(model, plan, MPI_COMM_WORLD);
  cpu::Trainer trainer(model, plan, options, MPI_COMM_WORLD);
  return trainer.run(print);
}

}  // namespace trainsim
