// Range checks of numeric options, written by trainsim rather than the argument parser: they read
// the option's text before CLI11 converts it, so NaN, infinities, fractions where a count is
// wanted, negative values and absurd sizes all get one message that names the option, the value,
// the range and what the option means, with a hint (the bounds: common/limits.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/errors.hpp"
#include "plan/plan_json.hpp"  // comma_list

namespace trainsim {

// `x` as a message shows it (shortest form: 1e+06, 0.15, nan).
std::string option_number_text(double x);

// A whole number from `min` to `max`; `what` says what it counts ("GPUs", "sequences"), and
// `hint_above` what to say of a value above `max` (default: the bound of common/limits.hpp).
CLI::Validator whole_number(int64_t min, int64_t max, const std::string& what, const std::string& hint_above = "");
// A finite number from `min` (excluded when `min_excluded`) to `max`, in `unit`.
CLI::Validator real_number(double min, double max, const std::string& unit, bool min_excluded = true);

// A count of tokens: a whole number, or one with a binary suffix, K (2^10) or M (2^20), as in
// "4M tokens" (Llama 3's 4,194,304 = 1024 sequences of 4096); at most common/limits.hpp's
// batch x sequence. parse_token_count: the count, nullopt when the text is none.
std::optional<int64_t> parse_token_count(const std::string& text);
CLI::Validator token_count();

// --cuda-graphs: comma-separated CUDA graph scopes, or none.
CLI::Validator cuda_graphs_check();

// The check of such an option: "<text> is not a <what> or comma-separated list of them (<names>)".
template <typename T>
CLI::Validator comma_list_check(T (*parse)(const std::string&), const std::string& what, const std::string& names) {
  return CLI::Validator(
      [parse, what, names](std::string& text) -> std::string {
        try {
          comma_list(text, parse);
        } catch (const InputError&) {
          return text + " is not " + what + " or a comma-separated list of them (" + names + ")";
        }
        return "";
      },
      "NAME[,NAME...]");
}

// The message of a parse error as trainsim prints it: CLI11's conversion errors rephrased
// ("--gpus: \"x\" is not a number"), a misspelt flag's nearest option of `command` (the
// subcommand being parsed, or null), and a hint naming its help when the message has none.
std::string parse_error_message(const CLI::ParseError& error, const CLI::App* command);

}  // namespace trainsim
