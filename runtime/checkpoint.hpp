// Checkpoints of the CPU runtime: one binary file per rank and iteration with a
// header that names the run (model shape, plan, world size, seed), the iteration, every parameter
// and the optimizer states, and a 64-bit FNV-1a checksum at the end. Written to a temporary file
// and renamed, so a run killed mid-write leaves the previous checkpoint intact. Loading checks
// everything and throws InputError naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::cpu {

struct CheckpointHeader {
  int64_t world_size = 0, dp = 0, tp = 0, pp = 0, zero_stage = 0;
  int64_t vpp = 1;  // model chunks per pipeline stage
  int64_t layers = 0, hidden = 0, vocab = 0, seq_len = 0;
  uint64_t seed = 0;
  int64_t iteration = -1;  // the last completed iteration
  int64_t optimizer_step = 0;
  bool operator==(const CheckpointHeader& o) const;  // same run (iteration and step not compared)
};

struct CheckpointData {
  CheckpointHeader header;
  std::vector<std::vector<float>> tensors;  // parameters, then optimizer states, in a fixed order
};

// Files of iteration N are `rank<r>.it<N>.ckpt`; `latest` names the last iteration every rank
// finished writing (rank 0 writes it after a barrier), so a run killed while saving resumes from
// the previous complete set.
std::string checkpoint_path(const std::string& dir, int rank, int64_t iteration);
std::string latest_marker_path(const std::string& dir);
void write_checkpoint(const std::string& path, const CheckpointData& data);
CheckpointData read_checkpoint(const std::string& path);

}  // namespace trainsim::cpu
