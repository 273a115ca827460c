// Finds, loads and checks libtrainsim_cuda.so once (dlopen), then forwards the two calls of
// cli/cuda_module.hpp. The module and the CUDA libraries it needs are loaded only here, so every
// other command runs on a machine without CUDA.
#include "cli/cuda_module_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "cli/cuda_module.hpp"
#include "common/errors.hpp"
#include "common/provenance.hpp"

namespace trainsim {

namespace {

namespace fs = std::filesystem;

#ifdef TRAINSIM_CUDA_MODULE_BUILT
constexpr bool kModuleBuilt = true;
#else
constexpr bool kModuleBuilt = false;
#endif

// $TRAINSIM_CUDA_MODULE, else beside the executable, else the install layout's lib/trainsim/.
std::vector<fs::path> module_candidates() {
  if (const char* env = std::getenv("TRAINSIM_CUDA_MODULE"); env != nullptr && *env != '\0') return {env};
  std::error_code ec;
  const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return {kCudaModuleFileName};
  return {dir / kCudaModuleFileName, (dir / ".." / "lib" / "trainsim" / kCudaModuleFileName).lexically_normal()};
}

fs::path find_module(const std::string& who) {
  const std::vector<fs::path> candidates = module_candidates();
  std::string looked;
  for (const fs::path& path : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return path;
    looked += (looked.empty() ? "" : " or ") + path.string();
  }
  throw InputError(who + ": the CUDA module " + kCudaModuleFileName + " is missing (no " + looked + ")",
                   "build it with `ninja -C build trainsim` in a CUDA build (it sits beside build/trainsim), keep it beside the "
                   "trainsim you run (or in ../lib/trainsim/), or point TRAINSIM_CUDA_MODULE at it (docs/cuda-runtime.md)");
}

const CudaModuleEntry& load_module(const std::string& who) {
  static const CudaModuleEntry* loaded = nullptr;
  if (loaded != nullptr) return *loaded;
  if (!kModuleBuilt) {
    throw InputError(who + ": this trainsim was built without CUDA (no nvcc or NCCL when it was configured, or -DTRAINSIM_CUDA=OFF)",
                     "rebuild with the CUDA 13 toolkit and NCCL (docs/cuda-runtime.md); the CPU backend needs neither: --backend cpu --precision fp32");
  }
  const fs::path path = find_module(who);
  void* handle = dlopen(fs::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL);  // a path, never a library-path search
  if (handle == nullptr) {
    throw InputError(who + ": cannot load the CUDA module " + path.string() + ": " + dlerror(),
                     "it needs the CUDA 13 runtime and cuBLAS (libcudart.so.13, libcublas.so.13, libcublasLt.so.13) and NCCL "
                     "(libnccl.so.2): install the CUDA 13 toolkit and NCCL, or add the folders holding them to LD_LIBRARY_PATH");
  }
  const auto entry_fn = reinterpret_cast<TrainsimCudaModuleEntryFn>(dlsym(handle, kCudaModuleEntrySymbol));
  const CudaModuleEntry* entry = entry_fn != nullptr ? entry_fn() : nullptr;
  const bool same_build = entry != nullptr && entry->abi_version == kCudaModuleAbiVersion &&
                          std::string(entry->git_revision) == git_revision() && entry->sizes == CudaModuleTypeSizes{};
  if (!same_build) {
    throw InputError(who + ": " + path.string() + " is not the CUDA module of this trainsim (revision " + git_revision() + ", module: " +
                         (entry != nullptr ? std::string(entry->git_revision) : std::string("no ") + kCudaModuleEntrySymbol) + ")",
                     "use the libtrainsim_cuda.so built with this trainsim: rebuild both (`ninja -C build trainsim`) or install them together");
  }
  loaded = entry;
  return *loaded;
}

void rethrow(const CudaModuleFailure& failure) {
  switch (failure.kind) {
    case CudaModuleFailure::Kind::kNone: return;
    case CudaModuleFailure::Kind::kInput: throw InputError(failure.problems, failure.hint);
    case CudaModuleFailure::Kind::kDevice: throw DeviceError(failure.problems.front());
    case CudaModuleFailure::Kind::kOther: throw std::runtime_error(failure.problems.front());
  }
}

}  // namespace

Measurement train_with_cuda_module(const ModelSpec& model, const ParallelPlan& plan, const runtime::RunOptions& options, int world_size,
                                   const std::function<void(const IterationRecord&)>& on_iteration, nlohmann::ordered_json& device) {
  const CudaModuleEntry& module = load_module("--backend cuda");
  Measurement measurement;
  CudaModuleFailure failure;
  module.train({&model, &plan, &options, world_size, &on_iteration, &measurement, &device}, failure);
  rethrow(failure);
  return measurement;
}

HardwareProfile calibrate_gpu_with_cuda_module(const GpuCalibrationOptions& options) {
  const CudaModuleEntry& module = load_module("calibrate gpu");
  HardwareProfile profile;
  CudaModuleFailure failure;
  module.calibrate_gpu({&options, &profile}, failure);
  rethrow(failure);
  return profile;
}

}  // namespace trainsim
