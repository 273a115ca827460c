// `[mpirun -np N] trainsim run --model M <plan> --backend cpu|cuda --steps N --out MEASURED.json
//  [--seed S] [--data FILE] [--lr X] [--checkpoint-every N --checkpoint-dir D] [--resume |
//  --resume-from-last-good] [--collective-timeout S]`: trains the plan for real and writes
// trainsim.measurement. A rank that hangs stops the job after S seconds (docs/hardening.md).
// --backend cuda runs runtime/cuda/ (bf16, one rank per GPU) when this build has it.
#include <mpi.h>

#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"
#include "reports/measurement_json.hpp"
#include "reports/text_table.hpp"
#include "runtime/cpu/trainer.hpp"
#include "runtime/watchdog.hpp"
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME
#include "runtime/cuda/cuda_trainer.hpp"
#endif

namespace trainsim {

namespace {

struct RunArgs {
  ModelOptions model;
  PlanOptions plan;
  std::string backend = "cpu", out, data = TRAINSIM_DEFAULT_CORPUS;
  int64_t steps = 10, warmup = 1, checkpoint_every = 0;
  std::string checkpoint_dir;
  bool resume = false, resume_from_last_good = false;
  double collective_timeout_s = 300;
  uint64_t seed = 1234;
  double lr = 1e-3;
};

// Trains on the chosen backend; `device` gets the CUDA backend's device and memory figures.
Measurement train(const RunArgs& a, const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, int world_size,
                  nlohmann::ordered_json& device) {
  const auto print = [&](const IterationRecord& r) {
    std::cerr << "step " << r.iteration + 1 << "/" << a.steps << "  loss " << format_fixed(r.loss, 4) << "  "
              << format_fixed(r.time_s, 3) << " s\n";
  };
  // Every rank stops the job when it makes no progress for the timeout (runtime/watchdog.hpp).
  const runtime::Watchdog watchdog(MPI_COMM_WORLD, a.collective_timeout_s);
  if (a.backend == "cuda") {
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME
    cuda::check_cuda_plan(model, plan, world_size);
    cuda::CudaTrainer trainer(model, plan, options, MPI_COMM_WORLD);
    Measurement m = trainer.run(print);
    const cuda::DeviceReport& d = trainer.device_report();
    device = {{"device", d.device},
              {"memory_peak_gib_is", "largest over ranks of the CUDA runtime's own device allocations at their peak (bf16 weights, "
                                     "fp32 gradients, master weights and AdamW states, activations, workspaces); not the CUDA "
                                     "context, NCCL or cuBLASLt buffers"},
              {"device_used_peak_gib", d.device_used_peak_gib},
              {"device_used_peak_gib_is", "largest over ranks of cudaMemGetInfo total - free after each iteration (everything on "
                                          "the GPU, other processes included)"},
              {"device_total_gib", d.device_total_gib},
              {"activation_slots_rank0", d.activation_slots}};
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
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int ranks_on_host = 1;
  MPI_Comm_size(host, &ranks_on_host);
  MPI_Comm_free(&host);
  cpu::check_host_memory(model, plan, ranks_on_host, cpu::host_available_bytes());
  cpu::Trainer trainer(model, plan, options, MPI_COMM_WORLD);
  return trainer.run(print);
}

int run_training(const RunArgs& a, int rank, int world_size) {
  const ModelSpec model = a.model.resolve();
  const ParallelPlan plan = a.plan.resolve(model);
  runtime::RunOptions options;
  options.steps = a.steps;
  options.warmup_iterations = a.warmup;
  options.seed = a.seed;
  options.data_path = a.data;
  options.learning_rate = a.lr;
  options.checkpoint_every = a.checkpoint_every;
  options.checkpoint_dir = a.checkpoint_dir;
  options.resume = a.resume || a.resume_from_last_good;
  options.resume_from_last_good = a.resume_from_last_good;
  options.notify = [](const std::string& note) { std::cerr << note << "\n"; };
  if ((a.checkpoint_every > 0 || options.resume) && a.checkpoint_dir.empty()) {
    throw InputError("--checkpoint-every, --resume and --resume-from-last-good need --checkpoint-dir",
                     "give --checkpoint-dir DIR: the folder where the run writes (and --resume reads) its checkpoints");
  }
  nlohmann::ordered_json device;
  const Measurement m = train(a, model, plan, options, world_size, device);
  if (rank != 0) return 0;
  nlohmann::ordered_json inputs;
  inputs["model"] = model_to_json(model);
  inputs["plan"] = plan_to_json(plan);
  inputs["run"] = {{"backend", a.backend}, {"steps", a.steps}, {"warmup_iterations", a.warmup}, {"seed", a.seed},
                   {"data", a.data}, {"learning_rate", a.lr}, {"ranks", world_size}, {"resumed", options.resume},
                   {"first_iteration", m.iterations.front().iteration}};
  if (!device.is_null()) inputs["run"]["cuda"] = device;
  std::ofstream out(a.out);
  if (!out) throw InputError("--out: cannot write " + a.out, "check that the folder exists and is writable");
  out << measurement_json(m, inputs).dump(2) << "\n";
  const PhaseBreakdown& b = m.breakdown;
  std::cout << "median iteration " << format_fixed(m.iteration_time_s, 4) << " s over " << m.iterations.size() - static_cast<size_t>(m.warmup_iterations)
            << " timed steps; forward " << format_fixed(b.forward_s, 4) << ", backward " << format_fixed(b.backward_s, 4)
            << ", TP " << format_fixed(b.tp_comm_exposed_s, 4) << ", DP " << format_fixed(b.dp_comm_exposed_s, 4) << ", PP "
            << format_fixed(b.pp_comm_exposed_s, 4) << ", waiting " << format_fixed(b.bubble_s, 4) << ", optimizer "
            << format_fixed(b.optimizer_s, 4) << " s; peak memory " << format_fixed(m.memory_peak_gib, 3) << " GiB"
            << (m.backend == "cpu" ? "; " + std::to_string(static_cast<int64_t>(m.page_faults_per_iteration)) +
                                         " page faults per iteration (rank 0)"
                                   : std::string())
            << "\nloss " << format_fixed(m.iterations.front().loss, 4) << " -> " << format_fixed(m.iterations.back().loss, 4)
            << "; measurement written to " << a.out << "\n";
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& root) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* app = root.add_subcommand("run", "execute a plan for real (under mpirun for several ranks) and measure it");
  a->model.add_to(*app);
  a->plan.add_to(*app);
  app->add_option("--backend", a->backend, "cpu (Eigen + MPI) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_option("--steps", a->steps, "training iterations (default 10)")->transform(whole_number(1, 1000000000, "steps"));
  app->add_option("--warmup", a->warmup, "iterations left out of the median (default 1)")
      ->transform(whole_number(0, 1000000000, "steps"));
  app->add_option("--seed", a->seed, "same seed, same data order and initial model, whatever the plan");
  app->add_option("--data", a->data, "text file to train on, read as bytes (default: trainsim's corpus)");
  app->add_option("--lr", a->lr, "AdamW learning rate (default 1e-3)")->check(real_number(0, 1000, ""));
  app->add_option("--out", a->out, "trainsim.measurement JSON to write")->required();
  app->add_option("--checkpoint-every", a->checkpoint_every, "save a checkpoint after every N steps")
      ->transform(whole_number(1, 1000000000, "steps"));
  app->add_option("--checkpoint-dir", a->checkpoint_dir, "where checkpoints go (one file per rank and step)");
  app->add_flag("--resume", a->resume, "continue from the latest checkpoint (same model, plan, ranks and seed)");
  app->add_flag("--resume-from-last-good", a->resume_from_last_good,
                "--resume, but if the latest checkpoint set fails to load on any rank (missing, truncated, checksum), "
                "continue from the newest older set that loads on every rank (a run keeps the last two)");
  app->add_option("--collective-timeout", a->collective_timeout_s,
                  "seconds a rank may go without progress (stuck in a collective, a peer stopped) before it stops the "
                  "whole job naming the silent ranks (default 300; 0: never)")
      ->check(real_number(0, 1e7, "seconds; 0 = never", false));
  return {app, [a]() {
            int initialized = 0;
            MPI_Initialized(&initialized);
            // Thread-multiple for the watchdog's heartbeats (runtime/watchdog.hpp); it runs without them otherwise.
            int provided = 0;
            if (!initialized) MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
            int rank = 0, size = 1;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            MPI_Comm_size(MPI_COMM_WORLD, &size);
            a->plan.default_gpus = size;
            // The CPU runtime's kernels are its own (CP runs its unfused ring attention).
            a->plan.rules = a->backend == "cpu" ? PlanRules::kCpuRuntime : PlanRules::kFrameworks;
            int status = 0;
            try {
              status = run_training(*a, rank, size);
            } catch (...) {
              MPI_Finalize();
              if (rank == 0) throw;  // every rank fails the same way; rank 0 reports it
              return 2;
            }
            MPI_Finalize();
            return status;
          }};
}

}  // namespace trainsim
