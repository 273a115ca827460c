// Checkpoint bytes from the plan's per-rank states (plan/rank_memory) and seconds from the storage
// rates; docs/goodput.md §2 derives each rule.
#include "sim/checkpoint_cost.hpp"

#include <algorithm>

#include "plan/rank_memory.hpp"

namespace trainsim {

namespace {

// What one rank of a stage keeps between iterations and a restart needs: its weights and optimizer
// states. ZeRO-3 stores the weights sharded like the optimizer states (with ZeRO-3 + PP the gathered
// copy rank_memory counts is a working buffer, not state).
double held_bytes(const StageMemory& s, const ParallelPlan& plan) {
  const StateBytes b = state_bytes_per_param(plan);
  const double weights = fsdp_layer_by_layer(plan) ? s.memory.optimizer_bytes * b.weights / b.optimizer : s.memory.weights_bytes;
  return weights + s.memory.optimizer_bytes;
}

// Deduplicated: a stage's states once per model-parallel position, spread evenly over the ranks
// that hold copies — the ZeRO-3 share of the shard group (rank_memory with zero_stage 3), further
// split over HSDP replicas.
double deduplicated_bytes(const StageMemory& fully_sharded, const ParallelPlan& plan) {
  const StateBytes b = state_bytes_per_param(plan);
  const double optimizer = fully_sharded.memory.optimizer_bytes;
  return (optimizer + optimizer * b.weights / b.optimizer) / static_cast<double>(plan.shard_replicas());
}

}  // namespace

StorageBandwidth default_storage() {
  StorageBandwidth s;
  s.write_bytes_per_s_total = s.read_bytes_per_s_total = kDefaultStorageBytesPerSTotal;
  s.write_bytes_per_s_per_node = kDefaultWriteBytesPerSPerNode;
  s.read_bytes_per_s_per_node = kDefaultReadBytesPerSPerNode;
  s.source = "defaults (docs/goodput.md)";
  return s;
}

double storage_transfer_s(double bytes_total, double bytes_per_node, double bytes_per_s_total, double bytes_per_s_per_node) {
  double seconds = 0;
  if (bytes_per_s_total > 0) seconds = std::max(seconds, bytes_total / bytes_per_s_total);
  if (bytes_per_s_per_node > 0) seconds = std::max(seconds, bytes_per_node / bytes_per_s_per_node);
  return seconds;
}

CheckpointCost estimate_checkpoint(const ModelSpec& model, const ParallelPlan& plan, int64_t gpus_per_node,
                                   const CheckpointSettings& settings) {
  const RankMemory held = estimate_rank_memory(model, plan);
  ParallelPlan sharded = plan;
  sharded.zero_stage = 3;
  const RankMemory dedup = estimate_rank_memory(model, sharded);
  const double ranks_per_stage = static_cast<double>(plan.gpus() / plan.pp);
  CheckpointCost c;
  double held_max = 0, written_max = 0;
  for (size_t i = 0; i < held.stages.size(); ++i) {
    const double h = held_bytes(held.stages[i], plan);
    const double w = settings.layout == CheckpointLayout::kEveryRank ? h : deduplicated_bytes(dedup.stages[i], plan);
    c.read_bytes_total += h * ranks_per_stage;
    c.written_bytes_total += w * ranks_per_stage;
    if (h > held_max) held_max = h;
    if (w > written_max) written_max = w;
  }
  c.held_bytes_per_rank = held_max;
  c.written_bytes_per_rank = written_max;
  // A node holds gpus_per_node ranks (fewer on a job smaller than a node); the node holding the
  // largest stage's ranks is the one the others wait for.
  const double ranks_per_node = static_cast<double>(std::min(gpus_per_node, plan.gpus()));
  const StorageBandwidth& s = settings.storage;
  c.save_s = storage_transfer_s(c.written_bytes_total, written_max * ranks_per_node, s.write_bytes_per_s_total, s.write_bytes_per_s_per_node);
  c.load_s = storage_transfer_s(c.read_bytes_total, held_max * ranks_per_node, s.read_bytes_per_s_total, s.read_bytes_per_s_per_node);
  if (settings.host_copy_bytes_per_s > 0) c.host_copy_s = written_max / settings.host_copy_bytes_per_s;
  c.stall_s = settings.mode == CheckpointMode::kAsync ? c.host_copy_s : c.save_s;
  return c;
}

const char* to_string(CheckpointMode mode) { return mode == CheckpointMode::kAsync ? "async" : "sync"; }
const char* to_string(CheckpointLayout layout) {
  return layout == CheckpointLayout::kEveryRank ? "every-rank" : "deduplicated";
}

}  // namespace trainsim
