// `trainsim calibrate {gpu|cpu} --out PROFILE.json [--quick] [--checkpoint-dir DIR]`: measures a
// hardware profile. CPU: Eigen GEMMs, copy bandwidth, MPI collectives when launched under `mpirun
// -np N`, and (--checkpoint-dir) the folder's checkpoint write / read rates.
// GPU: cuBLASLt GEMMs, memory-bound kernels, attention, NCCL collectives (the CUDA module, loaded
// on this use: cli/cuda_module_loader.hpp). Where --out goes is checked before any sweep.
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "calibrate/cpu_calibrator.hpp"
#include "calibrate/profile_stamp.hpp"
#include "cli/app.hpp"
#include "cli/cuda_module_loader.hpp"
#include "common/errors.hpp"
#include "common/profile_json.hpp"
#include "interop/kineto_calibration.hpp"
#include "reports/profile_report.hpp"

namespace trainsim {

namespace {

// The sweep takes minutes: a profile that could not be written is refused before it starts.
void check_out_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw InputError("--out: " + path + " is a folder, not a file", "give the profile's file name, e.g. --out " + (fs::path(path) / "profile.json").string());
  }
  if (!fs::is_directory(folder, ec)) {
    throw InputError("--out: the folder " + folder.string() + " of " + path + " does not exist",
                     "create it first (mkdir -p " + folder.string() + "), or write the profile elsewhere");
  }
  if (access(folder.c_str(), W_OK) != 0) {
    throw InputError("--out: the folder " + folder.string() + " of " + path + " is not writable", "write the profile into a folder you may write to");
  }
}

void write_profile(const HardwareProfile& profile, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("--out: cannot write " + path, "check that the folder exists and is writable");
  out << profile_to_json(profile).dump(1) << "\n";
}

int calibrate_cpu_command(const std::string& out_path, bool quick, const std::string& checkpoint_dir) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    CpuCalibrationOptions options;
    options.quick = quick;
    options.storage_dir = checkpoint_dir;
    if (rank == 0) options.progress = [](const std::string& line) { std::cerr << "calibrate cpu: " << line << "\n"; };
    const HardwareProfile profile = calibrate_cpu(options);
    if (rank == 0) {
      write_profile(profile, out_path);
      std::cout << render_profile_summary(profile) << "profile written to " << out_path << "\n";
    }
  } catch (...) {
    MPI_Finalize();
    throw;
  }
  MPI_Finalize();
  return status;
}

// `calibrate trace FILE...`: a partial profile from what PyTorch profiler traces measured.
int calibrate_trace_command(const std::vector<std::string>& traces, const std::string& out_path) {
  TraceCalibration c = calibrate_from_traces(traces);
  stamp_provenance(c.profile.provenance);
  write_profile(c.profile, out_path);
  std::cout << render_profile_summary(c.profile) << "profile written to " << out_path << "\n";
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& root) {
  struct Options {
    std::string device, out, checkpoint_dir;
    std::vector<std::string> traces, gemm_dtypes;
    bool quick = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("calibrate", "measure a hardware profile (GPU or CPU), or derive one from profiler traces");
  app->add_option("device", o->device, "gpu, cpu, or trace (a partial GPU profile from PyTorch profiler traces)")
      ->required()
      ->check(CLI::IsMember({"gpu", "cpu", "trace"}));
  app->add_option("traces", o->traces, "trace: the PyTorch profiler (Kineto) trace files, .json or .json.gz, recorded with record_shapes=True");
  app->add_option("--out", o->out, "profile JSON to write")->required();
  app->add_flag("--quick", o->quick, "a smaller sweep (CPU: < 1 min; GPU: < 2 min)");
  app->add_option("--gemm-dtypes", o->gemm_dtypes, "gpu: the GEMM tables to measure, out of bf16, fp16, tf32, fp8 "
                                                   "(default: all four, fp8 where the GPU has it)")
      ->delimiter(',')
      // gpu_calibration_dtypes() (calibrate/cuda_calibrator.hpp) lives in the CUDA module, which a
      // build without CUDA lacks: the names are checked here so every build refuses the same way.
      ->check(CLI::IsMember({"bf16", "fp16", "tf32", "fp8"}));
  app->add_option("--checkpoint-dir", o->checkpoint_dir, "cpu: measure checkpoint write / read rates in this folder "
                                                         "(run --checkpoint-dir; predict --profile then prices checkpoints)");
  return {app, [o]() {
            check_out_path(o->out);
            if (o->device == "trace") {
              if (o->traces.empty()) {
                throw InputError("calibrate trace: no trace file given", "trainsim calibrate trace TRACE.json.gz... --out PROFILE.json");
              }
              if (o->quick || !o->checkpoint_dir.empty() || !o->gemm_dtypes.empty()) {
                const std::string option = o->quick ? "--quick" : !o->checkpoint_dir.empty() ? "--checkpoint-dir" : "--gemm-dtypes";
                throw InputError("calibrate trace: " + option + " applies to a sweep, not to traces",
                                 "leave it out: calibrate trace only reads the traces");
              }
              return calibrate_trace_command(o->traces, o->out);
            }
            if (!o->traces.empty()) {
              throw InputError("calibrate " + o->device + ": unexpected argument " + o->traces.front(),
                               "trace files go with calibrate trace FILE... --out PROFILE.json");
            }
            if (!o->checkpoint_dir.empty() && !std::filesystem::is_directory(o->checkpoint_dir)) {
              throw InputError("--checkpoint-dir: " + o->checkpoint_dir + " is not a folder", "create it first (mkdir -p), or point at where run --checkpoint-dir writes");
            }
            if (o->device == "cpu" && !o->gemm_dtypes.empty()) {
              throw InputError("--gemm-dtypes: calibrate cpu measures the host's own GEMM dtypes", "leave it out, or use it with calibrate gpu");
            }
            if (o->device == "cpu") return calibrate_cpu_command(o->out, o->quick, o->checkpoint_dir);
            if (!o->checkpoint_dir.empty()) throw InputError("--checkpoint-dir: calibrate gpu does not measure storage yet", "measure it with calibrate cpu --checkpoint-dir DIR on the same node, or give predict --node-storage-write-gb-per-s");
            GpuCalibrationOptions options;
            options.quick = o->quick;
            options.dtypes = o->gemm_dtypes;
            options.progress = [](const std::string& line) { std::cerr << "calibrate gpu: " << line << "\n"; };
            const HardwareProfile profile = calibrate_gpu_with_cuda_module(options);
            write_profile(profile, o->out);
            std::cout << render_profile_summary(profile) << "profile written to " << o->out << "\n";
            return 0;
          }};
}

}  // namespace trainsim
