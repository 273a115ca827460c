// What one checkpoint of a plan weighs and costs: the states each rank holds (weights and optimizer
// states, sharded as the plan shards them: estimate_rank_memory), what is written (deduplicated over
// replicas, or every rank's file as the CPU runtime writes), and the save, load and stall seconds on
// a given storage. Defaults and their sources: docs/goodput.md §2. Failures and goodput: goodput.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

// Storage the checkpoint goes to, in bytes per second. The job's write is bounded by the aggregate
// rate and by each node's share (its network link or local disks), whichever binds.
struct StorageBandwidth {
  double write_bytes_per_s_total = 0, read_bytes_per_s_total = 0;
  double write_bytes_per_s_per_node = 0, read_bytes_per_s_per_node = 0;
  std::string source;  // "defaults (docs/goodput.md)", or the profile that measured them
};

// Defaults, each an outside figure or an assumption marked as one (docs/goodput.md §2):
// - aggregate write and read 2 TB/s: the sustained rate of the Tectonic file system Llama 3
//   checkpointed to (Llama Team 2024, §3.3.1; its peak is 7 TB/s);
// - per node read 40 GB/s: what NVIDIA's DGX SuperPOD H100 reference architecture says a
//   GPUDirect-Storage application reads per DGX node; per node write 20 GB/s: half of it, an
//   assumption (parallel file systems write more slowly than they read);
// - device-to-host copy 25 GB/s per GPU: PCIe 5.0 x16 moves 64 GB/s per direction (PCI-SIG), a
//   DGX H100 host switch uplink serves two GPUs, ~80% of the 32 GB/s each is achieved: an estimate.
inline constexpr double kDefaultStorageBytesPerSTotal = 2e12;
inline constexpr double kDefaultReadBytesPerSPerNode = 40e9;
inline constexpr double kDefaultWriteBytesPerSPerNode = 20e9;
inline constexpr double kDefaultHostCopyBytesPerS = 25e9;
StorageBandwidth default_storage();

enum class CheckpointMode { kSync, kAsync };  // async: training waits only for the device-to-host copy
// kDeduplicated: each state is written once, spread over its replicas (Megatron-Core's fully
// parallel save, PyTorch DCP's deduplication); kEveryRank: every rank writes all it holds (the
// trainsim runtimes).
enum class CheckpointLayout { kDeduplicated, kEveryRank };

struct CheckpointSettings {
  StorageBandwidth storage = default_storage();
  CheckpointMode mode = CheckpointMode::kSync;
  CheckpointLayout layout = CheckpointLayout::kDeduplicated;
  double host_copy_bytes_per_s = kDefaultHostCopyBytesPerS;  // device to host, per GPU (async only)
};

struct CheckpointCost {
  double held_bytes_per_rank = 0;     // weights + optimizer states of the largest stage's rank
  double written_bytes_per_rank = 0;  // what that rank writes
  double written_bytes_total = 0;     // the whole checkpoint as stored
  double read_bytes_total = 0;        // what a restart reads (every rank loads what it holds)
  double save_s = 0;                  // writing the checkpoint to storage
  double load_s = 0;                  // reading it back on restart
  double host_copy_s = 0;             // device to host copy of one rank's states (async)
  double stall_s = 0;                 // what training waits per checkpoint: save_s, or host_copy_s (async)
};

// The plan must be valid for the model; gpus_per_node from the hardware.
CheckpointCost estimate_checkpoint(const ModelSpec& model, const ParallelPlan& plan, int64_t gpus_per_node,
                                   const CheckpointSettings& settings);

// Seconds to move `bytes_total`, of which the busiest node moves `bytes_per_node`:
// max(total / aggregate rate, per node / per-node rate). A rate of 0 means no limit.
double storage_transfer_s(double bytes_total, double bytes_per_node, double bytes_per_s_total, double bytes_per_s_per_node);

const char* to_string(CheckpointMode mode);
const char* to_string(CheckpointLayout layout);

}  // namespace trainsim
