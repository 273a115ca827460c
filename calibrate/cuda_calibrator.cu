// calibrate_gpu (see cuda_calibrator.hpp): checks the options, finds the GPUs, runs the sweeps in
// order (GEMM per dtype, memory-bound, attention, then collectives and overlap when there are two
// GPUs or more) on GPU 0, timing the CUDA runtime's own kernels where it has them, and records
// provenance (device, clocks, driver and library versions, host, date, method) and notes on what
// was not measured. The measuring is in the other cuda_*.cu.
#include "calibrate/cuda_calibrator.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "calibrate/collective_fit.hpp"
#include "calibrate/cuda_attention_sweep.cuh"
#include "calibrate/cuda_collectives.cuh"
#include "calibrate/cuda_context.cuh"
#include "calibrate/cuda_device_query.hpp"
#include "calibrate/cuda_gemm_sweep.cuh"
#include "calibrate/cuda_memory_sweep.cuh"
#include "calibrate/cuda_overlap.cuh"
#include "calibrate/profile_stamp.hpp"
#include "common/errors.hpp"
#include "common/nearest_name.hpp"

namespace trainsim {

namespace {

constexpr size_t kCollectiveBufferBytes = size_t{1} << 30;
constexpr size_t kQuickCollectiveBufferBytes = size_t{256} << 20;

std::vector<std::string> checked_dtype_names(const std::vector<std::string>& dtypes) {
  const std::vector<std::string> valid = gpu_calibration_dtypes();
  std::vector<std::string> problems;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const std::string& name = dtypes[i];
    if (std::find(valid.begin(), valid.end(), name) == valid.end()) {
      problems.push_back("dtypes: unknown GEMM dtype \"" + name + "\"" + did_you_mean(name, valid));
    } else if (std::find(dtypes.begin(), dtypes.begin() + static_cast<std::ptrdiff_t>(i), name) !=
               dtypes.begin() + static_cast<std::ptrdiff_t>(i)) {
      problems.push_back("dtypes: \"" + name + "\" is given twice");
    }
  }
  if (!problems.empty()) throw InputError(problems, "GEMM dtypes are " + join_names(valid));
  return dtypes;
}

CudaEnvironment find_gpus() {
  CudaEnvironment env;
  try {
    env = query_cuda_environment();
  } catch (const DeviceError& e) {
    const std::string why = e.what();  // the runtime's check already gives a HINT for a missing driver or device
    throw DeviceError("GPU calibration needs a CUDA GPU, and none can be used: " + why +
                      (why.find("\nHINT:") != std::string::npos
                           ? ""
                           : "\nHINT: run on a machine with an NVIDIA GPU and its driver (nvidia-smi should list the "
                             "GPU); CUDA_VISIBLE_DEVICES may hide them"));
  }
  if (env.devices.empty()) {
    throw DeviceError("GPU calibration needs a CUDA GPU, and cudaGetDeviceCount found none\nHINT: check "
                      "nvidia-smi and CUDA_VISIBLE_DEVICES");
  }
  return env;
}

std::vector<GemmDtype> resolve_dtypes(const std::vector<std::string>& names, const CudaDeviceInfo& gpu,
                                      std::vector<std::string>& notes) {
  const bool has_fp8 = gpu.compute_major * 10 + gpu.compute_minor >= 89;
  const std::string capability = std::to_string(gpu.compute_major) + "." + std::to_string(gpu.compute_minor);
  std::vector<GemmDtype> dtypes;
  if (names.empty()) {
    dtypes = {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::tf32};
    if (has_fp8) {
      dtypes.push_back(GemmDtype::fp8);
    } else {
      notes.push_back("gemm fp8: not measured, " + gpu.name + " (compute capability " + capability + ") has no fp8");
    }
    return dtypes;
  }
  for (const std::string& name : names) {
    if (name == "fp8" && !has_fp8) {
      throw DeviceError("fp8 GEMMs need compute capability 8.9 or more; " + gpu.name + " has " + capability +
                        "\nHINT: leave fp8 out of the dtypes");
    }
    for (const GemmDtype d : {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::tf32, GemmDtype::fp8}) {
      if (name == gemm_dtype_name(d)) dtypes.push_back(d);
    }
  }
  return dtypes;
}

std::string dotted_version(long long code) {  // 130100 -> "13.1.0" (cuBLAS), 22809 -> "2.28.9" (NCCL)
  const long long major = code / 10000, minor = code % 10000 / 100, patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cuda_version(int code) {  // 13000 -> "13.0"
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

// The kernel driver's version from NVML, when libnvidia-ml can be loaded (no link dependency).
std::string nvml_driver_version() {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return "";
  using Status = int (*)();
  using Version = int (*)(char*, unsigned);
  const auto init = reinterpret_cast<Status>(dlsym(library, "nvmlInit_v2"));
  const auto version = reinterpret_cast<Version>(dlsym(library, "nvmlSystemGetDriverVersion"));
  const auto shutdown = reinterpret_cast<Status>(dlsym(library, "nvmlShutdown"));
  std::string result;
  if (init != nullptr && version != nullptr && shutdown != nullptr && init() == 0) {
    char text[96] = {};
    if (version(text, sizeof text) == 0) result = text;
    shutdown();
  }
  dlclose(library);
  return result;
}

ProfileProvenance provenance(const CudaEnvironment& env, const GpuContext& context, std::vector<std::string>& notes) {
  ProfileProvenance p;
  stamp_provenance(p);
  const CudaDeviceInfo& gpu = env.devices.front();
  p.device_kind = "gpu";
  p.device = gpu.name;
  p.devices = static_cast<int64_t>(env.devices.size());
  p.sm_count = gpu.sm_count;
  for (const CudaDeviceInfo& other : env.devices) {
    if (other.name != gpu.name) notes.push_back("devices differ: GPU " + std::to_string(other.index) + " is " + other.name);
  }
  const std::string kernel_driver = nvml_driver_version();
  p.driver = (kernel_driver.empty() ? "" : kernel_driver + ", ") + "CUDA " + cuda_version(env.driver_version);
  p.cuda = cuda_version(env.runtime_version);
  p.cublas = dotted_version(static_cast<long long>(env.cublaslt_version));
  p.nccl = env.nccl_version > 0 ? dotted_version(env.nccl_version) : "unavailable";
  p.eigen = eigen_version();
  int sm_khz = 0, memory_khz = 0;
  check_cuda(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, context.device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, context.device), "cudaDeviceGetAttribute");
  p.clocks = "sm " + std::to_string(sm_khz / 1000) + " MHz, mem " + std::to_string(memory_khz / 1000) + " MHz (peak)";
  char method[320];
  std::snprintf(method, sizeof method,
                "cudaEvent per sample (calls back to back when one takes under %.0f us), warm-up %d, %d..%d samples, "
                "stop when (p90-p10)/median < %.0f%% or %.1f s, cold buffers > 2x L2 (%s); NCCL: slowest rank's "
                "events, buffers not rotated",
                kMinSampleS * 1e6, context.sampler.warmup, context.sampler.min_samples, context.sampler.max_samples,
                context.sampler.target_rel_spread * 100, context.sampler.max_total_s,
                format_bytes(static_cast<double>(context.l2_bytes)).c_str());
  p.method = method;
  return p;
}

}  // namespace

std::vector<std::string> gpu_calibration_dtypes() { return {"bf16", "fp16", "tf32", "fp8"}; }

HardwareProfile calibrate_gpu(const GpuCalibrationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> names = checked_dtype_names(options.dtypes);
  const CudaEnvironment env = find_gpus();
  HardwareProfile profile;
  std::vector<std::string>& notes = profile.notes;
  const std::vector<GemmDtype> dtypes = resolve_dtypes(names, env.devices.front(), notes);

  const GpuContext context(0, SamplerOptions{}, options.progress);
  profile.provenance = provenance(env, context, notes);
  context.say("calibrating " + std::to_string(env.devices.size()) + " x " + profile.provenance.device + " (" +
              profile.provenance.clocks + "), CUDA " + profile.provenance.cuda + ", cuBLAS " +
              profile.provenance.cublas + ", NCCL " + profile.provenance.nccl + (options.quick ? ", quick" : ""));

  for (const GemmDtype dtype : dtypes) {
    profile.gemm.push_back(measure_gemm_table(context, dtype, gemm_grid(options.quick), notes));
  }
  notes.push_back("gemm: cuBLASLt, layout TN (A transposed), fp32 accumulation; bf16 through the CUDA runtime's own "
                  "Gemm (kernels/cuda/gemm.cu); tf32 is fp32 data on TF32 tensor cores; fp8 is e4m3 inputs "
                  "with bf16 output");
  profile.memory_bound = measure_memory_bound(context, options.quick);
  notes.push_back("memory_bound: the CUDA runtime's own kernels (kernels/cuda): layernorm forward and GELU, "
                  "SwiGLU forward on bf16 (rows of 4096), the unfused attention's causal softmax (in place, rows of "
                  "4096 keys, bytes counted for the whole score matrix), AdamW on fp32 state writing the bf16 weights "
                  "(bytes: 28 per parameter); backward kernels not measured; h2d and d2h use pinned host memory and "
                  "count the bytes copied once, not read plus written");
  profile.attention = measure_attention(context, options.quick);
  notes.push_back("attention: bf16, causal, forward and backward of the CUDA runtime's own kernels (batch 1, "
                  "kv_heads = heads): trainsim-runtime-flash is its simple fused kernel (WMMA), not FlashAttention "
                  "2/3; trainsim-runtime-unfused keeps the bf16 s x s probabilities");

  const int gpus = static_cast<int>(env.devices.size());
  if (gpus >= 2) {
    const NcclGroup group(gpus, options.quick ? kQuickCollectiveBufferBytes : kCollectiveBufferBytes);
    profile.collectives = measure_collectives(context, group, options.quick);
    profile.overlap.push_back(measure_gemm_beside_all_reduce(context, group));
    notes.push_back("collectives: one node, one process (ncclCommInitAll over " + std::to_string(gpus) +
                    " GPUs); inter-node collectives (under MPI) are not measured");
    notes.push_back("overlap: bf16 8192^3 GEMM on GPU 0 beside 256 MiB all-reduces on every GPU");
  } else {
    notes.push_back("collectives: not measured, 1 GPU visible (NCCL collectives need 2 or more); inter-node "
                    "collectives (under MPI) are not measured either");
    notes.push_back("overlap: not measured, needs 2 GPUs or more");
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char line[64];
  std::snprintf(line, sizeof line, "calibration done in %.0f s", elapsed);
  context.say(line);
  return profile;
}

}  // namespace trainsim
