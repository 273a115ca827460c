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
#include "cli/run_backend.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"
#include "reports/measurement_json.hpp"
#include "runtime/run_options.hpp"

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
  const Measurement m = train_on_backend(a.backend, model, plan, options, world_size, a.collective_timeout_s, device);
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
  std::cout << measurement_summary(m, a.out);
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
