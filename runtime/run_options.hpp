// What a training run is asked to do, whichever backend runs it: steps, seed, data, learning rate
// and clipping, DP bucket size, checkpointing and resuming. `trainsim run` fills it from its flags.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace trainsim::runtime {

struct RunOptions {
  int64_t steps = 10;
  int64_t warmup_iterations = 1;  // excluded from the median iteration time
  uint64_t seed = 1234;
  std::string data_path;          // default: the corpus built with trainsim
  double learning_rate = 1e-3;
  double grad_clip = 1.0;         // global gradient norm
  int64_t bucket_params = 40'000'000;  // DP gradient bucket (Megatron-LM's default)
  int64_t checkpoint_every = 0;   // save after every N iterations (0: never)
  std::string checkpoint_dir;
  bool resume = false;            // continue from the latest checkpoint in checkpoint_dir
  bool resume_from_last_good = false;  // with resume: a set some rank cannot load gives way to the newest older one all load
  std::function<void(const std::string&)> notify;  // world rank 0's notes for the user (a checkpoint set passed over)
};

}  // namespace trainsim::runtime
