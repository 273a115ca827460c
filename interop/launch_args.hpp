// The `--flag value` pairs of a launch script or a pasted argument list (Megatron-LM's
// pretrain_gpt.py under torchrun or srun, as `trainsim export --to torchrun` writes it): `#`
// comments dropped, `\` line continuations joined, quotes removed, `--flag=value` split, and the
// script's own simple variables (`TP=8`, `export TP=8`, `${TP:-8}`) substituted. It knows nothing
// of what a flag means: interop/megatron_import.cpp does. Also the strict number parsing every
// importer shares (a malformed value is an InputError naming the file, the key and the value).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/limits.hpp"

namespace trainsim {

struct LaunchFlag {
  std::string name;                  // with its dashes: "--tensor-model-parallel-size"
  std::optional<std::string> value;  // none for a switch
  // Further non-flag words after the value (argparse nargs="+": --recompute-modules core_attn moe_act).
  std::vector<std::string> more;
};

// The words of a shell script, comments and continuations removed, variables substituted.
std::vector<std::string> launch_words(const std::string& text);

// Every `--flag [value]` in `words`, in order. A flag in `switches` never takes a value; any other
// takes the next word unless that word is another flag, and the words after it up to the next flag
// as `more`. Words before the first flag (commands, script names) are skipped.
std::vector<LaunchFlag> launch_flags(const std::vector<std::string>& words, const std::set<std::string>& switches);

// `text` as an integer from min_value to max_value; an InputError naming `file`, `key` and the
// value otherwise. The default bound (common/limits.hpp's sequence length, the largest size a
// launch script states) keeps products of a few such values inside int64.
int64_t parse_count(const std::string& file, const std::string& key, const std::string& text, int64_t min_value,
                    int64_t max_value = limits::kMaxSeqLen);

}  // namespace trainsim
