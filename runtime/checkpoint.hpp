// Checkpoints of the runtimes (CPU and CUDA): one binary file per rank and iteration with a
// header that names the run (model shape, plan, world size, seed, backend), the iteration, every
// parameter and the optimizer states, and a 64-bit FNV-1a checksum at the end. Written to a temporary file
// and renamed, so a run killed mid-write leaves the previous checkpoint intact. Loading checks
// everything and throws InputError naming the file and what is wrong (truncated: the bytes there
// and the bytes needed; bit flips: the stored and the computed checksum).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim::runtime {

struct CheckpointHeader {
  int64_t world_size = 0, dp = 0, tp = 0, pp = 0, zero_stage = 0;
  int64_t vpp = 1;      // model chunks per pipeline stage
  int64_t backend = 0;  // 0: CPU (fp32), 1: CUDA (bf16 working weights, fp32 master and AdamW states)
  int64_t layers = 0, hidden = 0, vocab = 0, seq_len = 0;
  uint64_t seed = 0;
  int64_t iteration = -1;  // the last completed iteration
  int64_t optimizer_step = 0;
  bool operator==(const CheckpointHeader& o) const;  // same run (iteration and step not compared)
};

// The header naming a run of `plan` for `model` on `world_size` ranks (iteration and step unset).
CheckpointHeader checkpoint_header(const ModelSpec& model, const ParallelPlan& plan, int world_size, uint64_t seed, int64_t backend);

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

// The job's checkpoint of `data.header.iteration`: every rank of `world` writes its file, rank 0
// then moves `latest`, and the set `2 x every` iterations before is removed: the last two complete
// sets stay, so a damaged newest set has an older one to fall back to. Collective; a rank's write
// error is raised as InputError on every rank.
void save_checkpoint_set(MPI_Comm world, const std::string& dir, int64_t every, const CheckpointData& data);
// This rank's file of the latest complete set, checked against `expected` (the same run: header
// fields but iteration and step) and against the sizes of the tensors the caller will fill.
// Collective; any rank's problem is raised as InputError on every rank. With `fall_back`, a set
// that some rank cannot load (missing, truncated, checksum, sizes; not a file of another run) is
// passed over for the newest older set that loads on every rank, and `fall_back` is told on every
// rank which sets were refused and why, and which iteration is resumed.
CheckpointData load_checkpoint_set(MPI_Comm world, const std::string& dir, const CheckpointHeader& expected,
                                   const std::vector<size_t>& tensor_sizes,
                                   const std::function<void(const std::string&)>& fall_back = {});

}  // namespace trainsim::runtime
