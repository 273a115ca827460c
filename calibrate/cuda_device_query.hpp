// What the CUDA side of calibration records as provenance: the visible GPUs and the library
// versions (CUDA runtime and driver, cuBLASLt, NCCL). Built only with CUDA (TRAINSIM_HAVE_CUDA);
// throws DeviceError with the CUDA error when no usable driver or GPU is present.
#pragma once

#include <string>
#include <vector>

namespace trainsim {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int compute_major = 0, compute_minor = 0;
  double memory_total_bytes = 0;
};

struct CudaEnvironment {
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;
  size_t cublaslt_version = 0;
  int nccl_version = 0;
  std::vector<CudaDeviceInfo> devices;
};

CudaEnvironment query_cuda_environment();

}  // namespace trainsim
