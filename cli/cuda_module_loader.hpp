// Loads the CUDA module (cli/cuda_module.hpp) at its first use and runs its two calls, turning
// their failures back into trainsim's typed errors. Where it looks: $TRAINSIM_CUDA_MODULE when set
// (a file), else libtrainsim_cuda.so beside the trainsim executable, else ../lib/trainsim/ from it
// (the install layout). A missing module, a module that cannot load (no CUDA 13 libraries) or one
// from another build is an InputError naming what is missing and how to get it (exit 2).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "calibrate/cuda_calibrator.hpp"
#include "common/hardware_profile.hpp"
#include "common/measurement.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/run_options.hpp"

namespace trainsim {

// `run --backend cuda` on this rank; MPI_COMM_WORLD is the job (the caller initialised MPI).
Measurement train_with_cuda_module(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, int world_size,
                                   const std::function<void(const IterationRecord&)>& on_iteration, nlohmann::ordered_json& device);

// `calibrate gpu`.
HardwareProfile calibrate_gpu_with_cuda_module(const GpuCalibrationOptions& options);

}  // namespace trainsim
