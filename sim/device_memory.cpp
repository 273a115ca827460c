// Device memory overheads; every figure is a public measurement named beside it.
#include "sim/device_memory.hpp"

#include <algorithm>

namespace trainsim {

namespace {

// CUDA context plus the PyTorch runtime with lazy module loading (CUDA >= 11.7): 287,047,680 B
// (pytorch PR #86509); NVIDIA's forum figure is ~300-400 MB (pytorch #109888).
constexpr double kCudaContextBytes = 287047680.0;

// NCCL buffers of one communicator measured on 4 x A100 after a 4 MB all-reduce: 544 MB for a
// 2-GPU group, 688 MB for a larger one (nccl #964). NCCL creates them lazily, so only groups the
// plan communicates over count.
double communicator_bytes(int64_t ranks) {
  if (ranks <= 1) return 0;
  return (ranks == 2 ? 544.0 : 688.0) * 1e6;
}

}  // namespace

double DeviceMemory::of_kind(const std::string& memory_kind) const {
  if (memory_kind == "reserved_max") return reserved_bytes;
  if (memory_kind == "nvidia_smi_max") return device_used_bytes;
  return allocated_bytes;
}

bool counts_allocator_reserve(const std::string& memory_kind) {
  return memory_kind == "reserved_max" || memory_kind == "nvidia_smi_max";
}

DeviceMemory device_memory(const MemoryBreakdown& allocated, const ParallelPlan& plan, const Hardware& hardware,
                           double reserve_fraction) {
  DeviceMemory m;
  m.allocated_bytes = allocated.total_bytes();
  if (hardware.is_host()) {
    m.reserved_bytes = m.device_used_bytes = m.allocated_bytes;
    return m;
  }
  m.cuda_context_bytes = kCudaContextBytes;
  // cuBLASLt workspace PyTorch >= 2.3 allocates per handle: 32 MiB on Hopper and newer, 4 MiB on
  // Ampere parts with >= 24 GB (pytorch PR #120925), a catalog capability of the GPU.
  m.workspace_bytes = hardware.gpu.capabilities.cublas_workspace_bytes;
  // Communicators a Megatron-style job uses: TP, DP (over dp x cp with context parallelism), PP
  // (its point-to-point transfers), CP.
  m.nccl_bytes = communicator_bytes(plan.tp) + communicator_bytes(plan.dp * plan.cp) + communicator_bytes(plan.pp) +
                 communicator_bytes(plan.cp);
  // The caching allocator keeps the segments it carved for freed blocks; tensors allocated and
  // freed every step (of changing sizes, on more than one stream) leave holes no later request
  // fits. No public systematic measurement exists (shared/reference/microbench.md §5b), so the
  // fraction is fitted on measured reserved peaks (docs/cost-model.md "Device memory"); weights,
  // gradients and optimizer states sit in segments allocated once. Before it reports out of memory
  // the allocator frees its cached free segments and retries (CUDACachingAllocator's malloc
  // retry): the reserve takes only the room the GPU has left.
  const double transient = allocated.activations_bytes + allocated.other_bytes;
  const double room = hardware.gpu.memory_bytes - m.allocated_bytes - m.cuda_context_bytes - m.workspace_bytes - m.nccl_bytes;
  m.allocator_reserve_bytes = std::clamp(reserve_fraction * transient, 0.0, std::max(0.0, room));
  m.reserved_bytes = m.allocated_bytes + m.allocator_reserve_bytes;
  m.device_used_bytes = m.reserved_bytes + m.cuda_context_bytes + m.workspace_bytes + m.nccl_bytes;
  return m;
}

DevicePeak device_peak(const RankMemory& ranks, const ParallelPlan& plan, const Hardware& hardware, double reserve_fraction) {
  DevicePeak peak;
  for (const StageMemory& s : ranks.stages) {
    const DeviceMemory m = device_memory(s.memory, plan, hardware, reserve_fraction);
    if (s.stage == 0 || m.device_used_bytes > peak.memory.device_used_bytes) peak = {s.stage, m};
  }
  return peak;
}

MemoryTarget memory_target(const Hardware& hardware) {
  MemoryTarget t;
  t.fp8_transposed_copies = hardware.gpu.capabilities.generation != GpuGeneration::kBlackwell;
  return t;
}

}  // namespace trainsim
