// Device memory overheads; every figure is a public measurement named beside it.
#include "sim/device_memory.hpp"

namespace trainsim {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// CUDA context plus the PyTorch runtime with lazy module loading (CUDA >= 11.7): 287,047,680 B
// (pytorch PR #86509); NVIDIA's forum figure is ~300-400 MB (pytorch #109888).
constexpr double kCudaContextBytes = 287047680.0;

// cuBLASLt workspace PyTorch >= 2.3 allocates per handle: 32 MiB on Hopper and newer, 4 MiB on
// Ampere parts with >= 24 GB (pytorch PR #120925).
double workspace_bytes(const GpuSpec& gpu) { return (gpu.name.rfind("a100", 0) == 0 ? 4.0 : 32.0) * kMiB; }

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

DeviceMemory device_memory(double allocated_bytes, const ParallelPlan& plan, const Hardware& hardware) {
  DeviceMemory m;
  m.allocated_bytes = allocated_bytes;
  // The caching allocator's reserve beyond the allocated peak has no public systematic
  // measurement for LLM training (shared/reference/microbench.md §5b, "Hole"): not modeled, so
  // reserved = allocated. validate reports the miss against measured reserved peaks.
  m.allocator_reserve_bytes = 0;
  m.reserved_bytes = m.allocated_bytes + m.allocator_reserve_bytes;
  m.cuda_context_bytes = kCudaContextBytes;
  m.workspace_bytes = workspace_bytes(hardware.gpu);
  // Communicators a Megatron-style job uses: TP, DP (over dp x cp with context parallelism), PP
  // (its point-to-point transfers), CP.
  m.nccl_bytes = communicator_bytes(plan.tp) + communicator_bytes(plan.dp * plan.cp) + communicator_bytes(plan.pp) +
                 communicator_bytes(plan.cp);
  m.device_used_bytes = m.reserved_bytes + m.cuda_context_bytes + m.workspace_bytes + m.nccl_bytes;
  return m;
}

}  // namespace trainsim
