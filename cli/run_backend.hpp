// `trainsim run`'s choice of backend: trains the plan on "cpu" (Eigen + MPI) or "cuda" (cuBLAS +
// NCCL, from the CUDA module) after each backend's own plan checks, under the watchdog.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/measurement.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/run_options.hpp"

namespace trainsim {

// Collective over MPI_COMM_WORLD. A rank silent for `collective_timeout_s` stops the job (0:
// never). `device` gets the CUDA backend's device and memory figures (null on the CPU backend).
// Throws InputError for --backend cuda when the CUDA module or the CUDA libraries are missing.
Measurement train_on_backend(const std::string& backend, const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options,
                             int world_size, double collective_timeout_s, nlohmann::ordered_json& device);

}  // namespace trainsim
