// Which GPU this process drives, and failures agreed by every rank. One process per GPU: the
// device is the rank's index among the ranks on its host (MPI_Comm_split_type SHARED). More ranks
// than GPUs on a host is refused unless each rank has its own NCCL_HOSTID (the single-GPU test
// setup, BUILD-NOTES "NCCL facts"), in which case ranks share devices round-robin.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

namespace trainsim::cuda {

struct CudaDevice {
  int index = 0;
  std::string name;
  int local_rank = 0, local_size = 1;
  size_t memory_bytes = 0;
};

// Selects and sets the device on every rank of `world` (collective); DeviceError on every rank,
// naming the first rank that failed, when any rank has no usable GPU.
CudaDevice select_device(MPI_Comm world);

// Collective: if any rank passes an error, every rank throws DeviceError with the message of the
// lowest failing rank (so no rank is left waiting in a collective).
void agree_on_device_error(MPI_Comm world, const std::optional<std::string>& error);

}  // namespace trainsim::cuda
