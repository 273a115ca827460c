// Memory as the device reports it, not only the sum of tensors: the caching allocator's reserve,
// the CUDA context, library workspaces and NCCL's buffers per communicator, each from a public
// measurement (shared/reference/microbench.md §5b; docs/cost-model.md "Device memory").
// Published runs measure different things (memory_kind): PyTorch's peak reserved memory
// (allocator only), the device's used memory (everything), or a source's "peak" (allocated).
#pragma once

#include <string>

#include "plan/parallel_plan.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

struct DeviceMemory {
  double allocated_bytes = 0;          // tensors at their peak (the simulator's memory model)
  double allocator_reserve_bytes = 0;  // reserved minus allocated in the caching allocator
  double cuda_context_bytes = 0;
  double workspace_bytes = 0;          // cuBLAS(Lt) workspace
  double nccl_bytes = 0;               // NCCL buffers, every communicator of the plan
  double reserved_bytes = 0;           // allocated + allocator reserve (torch.cuda.max_memory_reserved)
  double device_used_bytes = 0;        // + context, workspace, NCCL (nvidia-smi)

  // The figure comparable with a measured memory kind: reserved_max -> reserved, nvidia_smi_max ->
  // device used, reported_peak or not stated -> allocated.
  double of_kind(const std::string& memory_kind) const;
};

DeviceMemory device_memory(double allocated_bytes, const ParallelPlan& plan, const Hardware& hardware);

}  // namespace trainsim
