// CUDA environment query (runtime, driver, cuBLASLt, NCCL versions and device properties).
#include "calibrate/cuda_device_query.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "kernels/cuda/cuda_check.cuh"

namespace trainsim {

using cuda::check_cuda;

CudaEnvironment query_cuda_environment() {
  CudaEnvironment env;
  check_cuda(cudaRuntimeGetVersion(&env.runtime_version), "cudaRuntimeGetVersion");
  check_cuda(cudaDriverGetVersion(&env.driver_version), "cudaDriverGetVersion");
  env.cublaslt_version = cublasLtGetVersion();
  if (ncclGetVersion(&env.nccl_version) != ncclSuccess) env.nccl_version = 0;
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties");
    CudaDeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.sm_count = prop.multiProcessorCount;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.memory_total_bytes = static_cast<double>(prop.totalGlobalMem);
    env.devices.push_back(info);
  }
  return env;
}

}  // namespace trainsim
