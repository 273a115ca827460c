// The CUDA module's entry point: `libtrainsim_cuda.so` (built from cli/cuda_module.cpp with
// runtime/cuda, kernels/cuda and the GPU calibrator) is what `run --backend cuda` and `calibrate
// gpu` load at their first use (cli/cuda_module_loader.hpp), so that `trainsim` itself needs no
// CUDA library and starts without one. One C symbol, `trainsim_cuda_module_entry`, hands over a
// table of two calls. Their arguments are trainsim's own C++ types: the module is built from the
// same sources in the same build, which the loader checks (revision and type sizes) before any call.
// Errors do not cross the boundary as exceptions: the module catches them into a CudaModuleFailure.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/cuda_calibrator.hpp"
#include "common/hardware_profile.hpp"
#include "common/measurement.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/run_options.hpp"

namespace trainsim {

// Raised by the module's calls: which typed error it was, with its text (InputError: its problems
// and hint; DeviceError and others: one line in `problems`).
struct CudaModuleFailure {
  enum class Kind { kNone, kInput, kDevice, kOther };
  Kind kind = Kind::kNone;
  std::vector<std::string> problems;
  std::string hint;
};

// run --backend cuda on this rank (MPI is initialised by the caller, MPI_COMM_WORLD is the job).
struct CudaTrainCall {
  const ModelSpec* model = nullptr;
  const ParallelPlan* plan = nullptr;
  const runtime::RunOptions* options = nullptr;
  int world_size = 1;
  const std::function<void(const IterationRecord&)>* on_iteration = nullptr;
  Measurement* measurement = nullptr;      // out
  nlohmann::ordered_json* device = nullptr;  // out: the device report (runtime/cuda device_report_json)
};

struct CudaCalibrateCall {
  const GpuCalibrationOptions* options = nullptr;
  HardwareProfile* profile = nullptr;  // out
};

// Sizes of the types passed across, compared by the loader: a module from another build refuses.
struct CudaModuleTypeSizes {
  size_t model = sizeof(ModelSpec), plan = sizeof(ParallelPlan), run_options = sizeof(runtime::RunOptions),
         measurement = sizeof(Measurement), profile = sizeof(HardwareProfile),
         calibration_options = sizeof(GpuCalibrationOptions), json = sizeof(nlohmann::ordered_json);
  bool operator==(const CudaModuleTypeSizes&) const = default;
};

struct CudaModuleEntry {
  int abi_version = 0;
  const char* git_revision = nullptr;  // common/provenance.hpp's, of the module's build
  CudaModuleTypeSizes sizes;
  void (*train)(const CudaTrainCall& call, CudaModuleFailure& failure) = nullptr;
  void (*calibrate_gpu)(const CudaCalibrateCall& call, CudaModuleFailure& failure) = nullptr;
};

constexpr int kCudaModuleAbiVersion = 1;
constexpr const char* kCudaModuleEntrySymbol = "trainsim_cuda_module_entry";
constexpr const char* kCudaModuleFileName = "libtrainsim_cuda.so";

}  // namespace trainsim

extern "C" {
using TrainsimCudaModuleEntryFn = const trainsim::CudaModuleEntry* (*)();
}
