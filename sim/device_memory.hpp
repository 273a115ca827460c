// Memory as the device reports it, not only the sum of tensors: the caching allocator's reserve,
// the CUDA context, library workspaces and NCCL's buffers per communicator, each from a public
// measurement (shared/reference/microbench.md §5b; docs/cost-model.md "Device memory").
// Published runs measure different things (memory_kind): PyTorch's peak reserved memory
// (allocator only), the device's used memory (everything), or a source's "peak" (allocated).
#pragma once

#include <string>

#include "plan/parallel_plan.hpp"
#include "plan/rank_memory.hpp"
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

// One rank's memory as the device sees it. The allocator's reserve is `reserve_fraction`
// (EfficiencyConstants::allocator_reserve_fraction) of the memory a step allocates and frees on
// it: activations and the other transient buffers (ZeRO-3 gathers, accumulating gradients); the
// weights, gradients and optimizer states live in segments allocated once. The reserve takes no
// more than the room the GPU has left beside the tensors, context, workspace and NCCL buffers:
// the allocator gives cached segments back before it reports out of memory, so a rank fits when
// device_used_bytes <= the GPU's memory. (Were the reserve required, 69 of the 337 published
// runs, all of which ran, would be judged not to fit; docs/cost-model.md "Device memory".)
// Whether a measured memory kind includes the allocator's reserve (reserved_max, nvidia_smi_max).
bool counts_allocator_reserve(const std::string& memory_kind);

DeviceMemory device_memory(const MemoryBreakdown& allocated, const ParallelPlan& plan, const Hardware& hardware,
                           double reserve_fraction);

// The stage whose device memory (used, nvidia-smi's figure) is largest, and that figure.
struct DevicePeak {
  int64_t stage = 0;
  DeviceMemory memory;
};
DevicePeak device_peak(const RankMemory& ranks, const ParallelPlan& plan, const Hardware& hardware, double reserve_fraction);

// The GPU's memory rules for plan/rank_memory: a Blackwell GPU's FP8 GEMMs take any layout, so a
// per-tensor FP8 weight keeps no transposed copy (the same test as CostModel::fp8_gemm_any_layout).
MemoryTarget memory_target(const Hardware& hardware);

}  // namespace trainsim
