// select_device and agree_on_device_error; see cuda_device.hpp.
#include "runtime/cuda/cuda_device.hpp"

#include <cuda_runtime.h>

#include <cstdlib>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "runtime/rank_grid.hpp"

namespace trainsim::cuda {

void agree_on_device_error(MPI_Comm world, const std::optional<std::string>& error) {
  if (const std::optional<runtime::RankError> first = runtime::first_error(world, error)) throw DeviceError(first->message);
}

CudaDevice select_device(MPI_Comm world) {
  int world_rank = 0;
  MPI_Comm_rank(world, &world_rank);
  set_error_rank(world_rank);
  CudaDevice device;
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &device.local_rank);
  MPI_Comm_size(local, &device.local_size);
  MPI_Comm_free(&local);
  std::optional<std::string> error;
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      throw DeviceError("rank " + std::to_string(world_rank) + ": no usable CUDA GPU (cudaGetDeviceCount: " +
                        (status != cudaSuccess ? std::string(cudaGetErrorString(status)) : std::string("0 devices")) +
                        ")\nHINT: run --backend cuda on a machine with an NVIDIA GPU and driver (nvidia-smi -L lists them), "
                        "or use --backend cpu --precision fp32");
    }
    const bool own_host_ids = std::getenv("NCCL_HOSTID") != nullptr;
    if (device.local_size > count && !own_host_ids) {
      throw DeviceError("rank " + std::to_string(world_rank) + ": " + std::to_string(device.local_size) +
                        " ranks on this host but " + std::to_string(count) +
                        " GPUs (the CUDA runtime runs one process per GPU)\nHINT: start at most one rank per GPU "
                        "(mpirun -np N --map-by ppr:GPUS:node), or, to test on one GPU, give each rank its own NCCL_HOSTID");
    }
    device.index = device.local_rank % count;
    check_cuda(cudaSetDevice(device.index), "cudaSetDevice(" + std::to_string(device.index) + ")");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, device.index), "cudaGetDeviceProperties");
    device.name = prop.name;
    device.memory_bytes = prop.totalGlobalMem;
    if (prop.major < 8) {
      throw DeviceError("rank " + std::to_string(world_rank) + ": GPU " + device.name + " (compute capability " +
                        std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                        ") has no bf16 tensor cores the CUDA runtime is built for (sm_80, sm_90)");
    }
  } catch (const DeviceError& e) {
    error = e.what();
  }
  agree_on_device_error(world, error);
  return device;
}

}  // namespace trainsim::cuda
