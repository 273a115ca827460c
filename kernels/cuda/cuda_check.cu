// The status checks of cuda_check.cuh: a failed call becomes a DeviceError that names the call,
// the status (name and text), the rank (when set), the host and the current device, with a HINT
// for the failures a user can do something about (out of memory, no GPU, NCCL setup).
#include "kernels/cuda/cuda_check.cuh"

#include <unistd.h>

#include <atomic>

#include "common/errors.hpp"

namespace trainsim::cuda {

namespace {

std::atomic<int> error_rank{-1};

const std::string& host_name() {
  static const std::string name = [] {
    char text[256] = {};
    if (gethostname(text, sizeof text - 1) != 0) return std::string("unknown");
    return std::string(text);
  }();
  return name;
}

// " on rank 3 (host gpu-node-7, device 0)"; the device is "?" when none can be asked.
std::string where() {
  int device = -1;
  const bool known = cudaGetDevice(&device) == cudaSuccess;
  std::string text;
  const int rank = error_rank.load();
  if (rank >= 0) text += " on rank " + std::to_string(rank);
  text += " (host " + host_name() + ", device " + (known ? std::to_string(device) : std::string("?")) + ")";
  return text;
}

}  // namespace

void set_error_rank(int rank) {
  host_name();  // read once, before anything can go wrong
  error_rank.store(rank);
}

void check_cuda(cudaError_t status, const std::string& call) {
  if (status == cudaSuccess) return;
  std::string hint;
  if (status == cudaErrorMemoryAllocation) {
    hint = "\nHINT: another process may hold GPU memory (see nvidia-smi); a run may take a smaller micro-batch or "
           "more recomputation, a calibration --quick";
  } else if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
    hint = "\nHINT: run on a machine with an NVIDIA GPU and driver (nvidia-smi should list it); "
           "CUDA_VISIBLE_DEVICES may hide the GPUs";
  }
  throw DeviceError(call + " failed" + where() + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                    ")" + hint);
}

void check_cublas(cublasStatus_t status, const std::string& call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string hint;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) hint = "\nHINT: the GPU is out of memory (see nvidia-smi)";
  throw DeviceError(call + " failed" + where() + ": " + cublasLtGetStatusName(status) + " (" +
                    cublasLtGetStatusString(status) + ")" + hint);
}

void check_nccl(ncclResult_t status, const std::string& call) {
  if (status == ncclSuccess) return;
  throw DeviceError(call + " failed" + where() + ": " + ncclGetErrorString(status) +
                    "\nHINT: NCCL_DEBUG=WARN (or INFO) shows why; NCCL needs each GPU in at most one rank");
}

void check_launch(const std::string& kernel) { check_cuda(cudaGetLastError(), "launching " + kernel); }

}  // namespace trainsim::cuda
