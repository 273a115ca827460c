// The GPU calibrator: measures GEMMs (cuBLASLt), memory-bound kernels, attention forward and
// backward (the CUDA runtime's own kernels, kernels/cuda) and NCCL collectives on the GPUs
// visible to this process and returns them as a HardwareProfile, with provenance and notes on what
// was not measured. Plain C++ (no CUDA types); built only with CUDA (TRAINSIM_HAVE_CUDA). It
// neither writes the profile (common/profile_json.cpp) nor spans nodes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/hardware_profile.hpp"

namespace trainsim {

struct GpuCalibrationOptions {
  bool quick = false;  // smaller grids: under 2 minutes on one GPU (the full profile: under 10)
  // GEMM dtypes, out of gpu_calibration_dtypes(). Empty: bf16, fp16, tf32, and fp8 where the GPU
  // has it (compute capability >= 8.9).
  std::vector<std::string> dtypes;
  std::function<void(const std::string&)> progress;  // one line per step, for stderr; may be empty
};

// bf16, fp16, tf32, fp8.
std::vector<std::string> gpu_calibration_dtypes();

// Throws InputError for an unknown or repeated dtype (before touching any GPU), DeviceError when
// no GPU can be used (no driver, no device, fp8 asked of a GPU without it) or when a measured
// kernel gives a wrong result.
HardwareProfile calibrate_gpu(const GpuCalibrationOptions& options);

}  // namespace trainsim
