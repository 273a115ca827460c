// A real training run of a plan on the CPU backend: one MPI process per rank, the plan's rank
// grid (Megatron order), its pipeline schedule from plan/ (GPipe, 1F1B or interleaved 1F1B), TP (+SP), CP
// (ring attention) and EP (MoE all-to-alls) inside the model, gradient all-reduce over DP x CP (expert
// gradients over the expert-DP ranks), AdamW with global-norm clipping, byte-level tokens from a real
// text corpus. The same seed gives the same data order and the same initial model whatever the
// plan, so layouts can be checked against each other (parity). Phases are timed per iteration.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/measurement.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/run_options.hpp"

namespace trainsim::cpu {

// Throws InputError for what the CPU runtime cannot run yet (named with the plan key).
void check_runtime_plan(const ModelSpec& model, const ParallelPlan& plan, int world_size);

// Throws InputError when `ranks_on_host` ranks of the plan need more than `available_bytes` of host
// memory by trainsim's own estimate (fp32 weights, gradients, AdamW states and activations of the
// largest stage): a clear refusal instead of the kernel's OOM killer minutes in. The estimate is a
// lower bound (the runtime's caches and Eigen temporaries come on top), so it refuses only plans
// that certainly do not fit.
void check_host_memory(const ModelSpec& model, const ParallelPlan& plan, int ranks_on_host, double available_bytes);
// MemAvailable of /proc/meminfo in bytes (free pages where it cannot be read).
double host_available_bytes();
// check_host_memory for the ranks of `world` that share this host (collective over `world`).
void check_host_memory(const ModelSpec& model, const ParallelPlan& plan, MPI_Comm world);

class Trainer {
 public:
  Trainer(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, MPI_Comm world);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Runs all steps; `on_iteration` is called on world rank 0 after each. Progress goes to
  // runtime/watchdog.hpp; an error inside an iteration on one rank of several stops the job
  // (MPI_Abort) instead of leaving the others waiting for it in a collective.
  Measurement run(const std::function<void(const IterationRecord&)>& on_iteration = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainsim::cpu
