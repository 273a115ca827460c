// NCCL collectives among the GPUs visible to this process (one rank per GPU, ncclCommInitAll):
// the communicators with a stream and send / receive buffers per rank, the collectives the
// profile records, and their sweep over message sizes. Single node only.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "calibrate/cuda_context.cuh"
#include "common/hardware_profile.hpp"

namespace trainsim {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };

const char* collective_name(Collective collective);  // as in CollectiveTable::kind

class NcclGroup {
 public:
  // Ranks 0 .. devices-1 on GPUs 0 .. devices-1, each with send and receive buffers of
  // buffer_bytes. Leaves GPU 0 current.
  NcclGroup(int devices, size_t buffer_bytes);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  size_t buffer_bytes() const { return buffer_bytes_; }
  ncclComm_t comm(int rank) const { return comms_[rank]; }
  cudaStream_t stream(int rank) const { return streams_[rank]; }
  float* send(int rank) const { return send_[rank].as<float>(); }
  float* recv(int rank) const { return recv_[rank].as<float>(); }
  void synchronize() const;

  // Enqueues one collective over `bytes` (the whole buffer S of the nccl-tests convention) as one
  // NCCL group on the ranks' streams; send_recv goes from rank 0 to rank 1.
  void enqueue(Collective collective, size_t bytes) const;

 private:
  void release() noexcept;

  size_t buffer_bytes_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<DeviceBuffer> send_, recv_;
};

// One table per collective (sizes 1 KiB .. 1 GiB in powers of 4; quick: 1 KiB .. 256 MiB in
// powers of 64), with algbw, busbw and the alpha-beta fit.
std::vector<CollectiveTable> measure_collectives(const GpuContext& context, const NcclGroup& group, bool quick);

// Fills every rank's send buffer with the pattern `collective` is checked against, and checks what
// the ranks received from the last `collective` of `bytes` (a DeviceError when wrong).
void fill_send_buffers(const NcclGroup& group, Collective collective);
void check_received(const NcclGroup& group, Collective collective, size_t bytes);

// Median seconds of one collective of `bytes` (no check); for sizing the overlap test.
double time_collective_s(const GpuContext& context, const NcclGroup& group, Collective collective, size_t bytes);

}  // namespace trainsim
