// The CUDA backend's training run (`trainsim run --backend cuda`): one MPI process per GPU, the
// plan's rank grid (runtime/cpu/mpi_groups.hpp) with NCCL communicators, the pipeline schedule of
// plan/pipeline_schedule (GPipe or 1F1B) with ncclSend / ncclRecv on their own streams, the DP
// gradient reduction in buckets on a communication stream (overlapping the last micro-batch's
// backward when plan.dp_overlap), ZeRO-1/2, AdamW with global-norm clipping. The data
// (runtime/token_data.hpp) and the initial model are those of the CPU backend, so the two can be
// compared loss for loss. Phases are timed with CUDA events into the same PhaseBreakdown as the CPU trainer's.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/measurement.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/run_options.hpp"

namespace trainsim::cuda {

// Throws InputError, naming the key, for what the CUDA runtime cannot run (precision must be bf16).
void check_cuda_plan(const ModelSpec& model, const ParallelPlan& plan, int world_size);

// What the measurement's memory figure is, and the device's own view, for the output's inputs.
struct DeviceReport {
  std::string device;                 // rank 0's GPU name
  double runtime_peak_gib = 0;        // largest over ranks of the runtime's own allocations at their peak
  double device_used_peak_gib = 0;    // largest over ranks of cudaMemGetInfo total - free (context, NCCL, cuBLASLt, other processes)
  double device_total_gib = 0;
  int64_t activation_slots = 0;       // micro-batches held at once on rank 0 (1F1B: at most pp - stage)
};

// The report as `trainsim run` writes it under inputs.run.cuda, each figure with what it is.
nlohmann::ordered_json device_report_json(const DeviceReport& report);

class CudaTrainer {
 public:
  // Collective over `world`: selects the GPU, builds the NCCL groups, uploads the initial model.
  // DeviceError (on every rank) when a rank has no usable GPU.
  CudaTrainer(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, MPI_Comm world);
  ~CudaTrainer();
  CudaTrainer(const CudaTrainer&) = delete;
  CudaTrainer& operator=(const CudaTrainer&) = delete;

  // Runs all steps; `on_iteration` is called on world rank 0 after each.
  Measurement run(const std::function<void(const IterationRecord&)>& on_iteration = {});
  const DeviceReport& device_report() const;  // filled by run()

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainsim::cuda
