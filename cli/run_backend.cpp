// `trainsim run`'s backends: the plan checks, the watchdog and the trainer of the CPU backend
// (runtime/cpu) or, in a CUDA build, the CUDA one (runtime/cuda); progress lines on stderr.
#include "cli/run_backend.hpp"

#include <mpi.h>

#include <iostream>

#include "common/errors.hpp"
#include "reports/text_table.hpp"
#include "runtime/cpu/trainer.hpp"
#include "runtime/watchdog.hpp"
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME
#include "runtime/cuda/cuda_trainer.hpp"
#endif

namespace trainsim {

Measurement train_on_backend(const std::string& backend, const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options,
                             int world_size, double collective_timeout_s, nlohmann::ordered_json& device) {
  const auto print = [&](const IterationRecord& r) {
    std::cerr << "step " << r.iteration + 1 << "/" << options.steps << "  loss " << format_fixed(r.loss, 4) << "  "
              << format_fixed(r.time_s, 3) << " s\n";
  };
  // Every rank stops the job when it makes no progress for the timeout (runtime/watchdog.hpp).
  const runtime::Watchdog watchdog(MPI_COMM_WORLD, collective_timeout_s);
  if (backend == "cuda") {
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME
    cuda::check_cuda_plan(model, plan, world_size);
    cuda::CudaTrainer trainer(model, plan, options, MPI_COMM_WORLD);
    Measurement m = trainer.run(print);
    device = cuda::device_report_json(trainer.device_report());
    return m;
#else
    (void)world_size;
    (void)device;
    throw DeviceError("--backend cuda: this trainsim was built without the CUDA runtime (no nvcc or NCCL when it was "
                      "configured, or -DTRAINSIM_CUDA=OFF)\nHINT: rebuild with CUDA and NCCL (docs/cuda-runtime.md), or use "
                      "--backend cpu --precision fp32");
#endif
  }
  cpu::check_runtime_plan(model, plan, world_size);
  cpu::check_host_memory(model, plan, MPI_COMM_WORLD);
  cpu::Trainer trainer(model, plan, options, MPI_COMM_WORLD);
  return trainer.run(print);
}

}  // namespace trainsim
