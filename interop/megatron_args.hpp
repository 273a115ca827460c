// A Megatron-LM argument list as read (interop/megatron_import.cpp): the value of each flag, its
// list (nargs="+"), the switches, and strict readers that name the file and the flag in errors.
// Collecting sorts every flag by what it means to the prediction (interop/megatron_flags.hpp) into
// the job's lists; the script's model flags are checked against --model (megatron_model_check.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/limits.hpp"
#include "interop/launch_args.hpp"
#include "interop/plan_import.hpp"

namespace trainsim {

struct MegatronArgs {
  std::string file;
  std::map<std::string, std::string> values;  // the last value of each flag (argparse: the last wins)
  std::map<std::string, std::vector<std::string>> lists;  // every value of its last use (nargs="+")
  std::set<std::string> switches;
  bool has(const std::string& flag) const { return switches.count(flag) > 0 || values.count(flag) > 0; }
  int64_t number(const std::string& flag, int64_t fallback, int64_t min_value = 1, int64_t max_value = limits::kMaxSeqLen) const {
    const auto it = values.find(flag);
    return it == values.end() ? fallback : parse_count(file, flag, it->second, min_value, max_value);
  }
  // A positive decimal (a factor), or `fallback` when the flag is absent.
  double real(const std::string& flag, double fallback) const {
    const auto it = values.find(flag);
    if (it == values.end()) return fallback;
    try {
      size_t used = 0;
      const double v = std::stod(it->second, &used);
      if (used == it->second.size() && v > 0 && v <= 1e3) return v;
    } catch (const std::exception&) {
    }
    throw InputError(file + ": " + flag + ": \"" + it->second + "\" is not a number between 0 and 1000",
                     "write a factor such as 1.0 or 1.25");
  }
  std::string text(const std::string& flag, const std::string& fallback) const {
    const auto it = values.find(flag);
    return it == values.end() ? fallback : it->second;
  }
};

// Every flag of `text`, each sorted into `job`'s lists (unknown with the nearest known flag, not
// modeled with what it changes, without effect); a refused flag or a read flag without its value
// is an InputError naming `file`.
MegatronArgs collect_megatron_args(const std::string& text, const std::string& file, ImportedJob& job);

// The script's model flags against `model`: a disagreement in shape is an InputError (all of them
// together); one in the RoPE base, which changes no speed or memory, a note in `job`.
void check_megatron_model(const MegatronArgs& args, const ModelSpec& model, ImportedJob& job);

}  // namespace trainsim
