// The Megatron-LM flags the importer knows, and what each means to a prediction: read into the plan
// or the model check; known but not modeled (it may change speed or memory: the prediction may be
// off); known and without effect on speed or memory (optimizer, data, checkpoints, logging);
// torchrun's and srun's own; refused (host offload, not modeled yet). Every other flag is unknown
// and reported with the nearest known name (interop/flag_suggestion.hpp). Meanings follow Megatron-LM's
// megatron/training/arguments.py (NVIDIA/Megatron-LM@d98e8a6).
#pragma once

#include <set>
#include <string>
#include <vector>

namespace trainsim {

enum class MegatronFlagKind { kRead, kNotModeled, kNoEffect, kLauncher, kRefused };

struct MegatronFlagInfo {
  MegatronFlagKind kind = MegatronFlagKind::kRead;
  bool is_switch = false;  // takes no value (argparse store_true)
  std::string why;         // kNotModeled: what it changes; kRefused: why; "" otherwise
};

// The flag's entry; nullptr for a flag the importer does not know.
const MegatronFlagInfo* megatron_flag(const std::string& name);

// Every known flag that takes no value (so the word after it is not read as its value).
const std::set<std::string>& megatron_switches();

// Every known flag, for "did you mean".
const std::vector<std::string>& megatron_flag_names();

}  // namespace trainsim
