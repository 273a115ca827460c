// CUDA, cuBLAS and NCCL status checks for the runtime and the calibrator: a failure becomes a
// DeviceError naming the call, the status, the rank and the host ("cudaMalloc(...) failed on
// rank 3 (host gpu-node-7, device 0): out of memory").
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

namespace trainsim::cuda {

// The rank named in messages from now on (-1: none; the host name is read once).
void set_error_rank(int rank);

void check_cuda(cudaError_t status, const std::string& call);
void check_cublas(cublasStatus_t status, const std::string& call);
void check_nccl(ncclResult_t status, const std::string& call);
// After a kernel launch: cudaGetLastError, named by the kernel.
void check_launch(const std::string& kernel);

}  // namespace trainsim::cuda

#define TRAINSIM_CUDA_CHECK(call) ::trainsim::cuda::check_cuda((call), #call)
#define TRAINSIM_CUBLAS_CHECK(call) ::trainsim::cuda::check_cublas((call), #call)
#define TRAINSIM_NCCL_CHECK(call) ::trainsim::cuda::check_nccl((call), #call)
