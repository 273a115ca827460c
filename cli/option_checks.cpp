// Numeric option checks and the wording of parse errors.
#include "cli/option_checks.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <vector>

#include "common/limits.hpp"
#include "common/nearest_name.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

namespace {

// The whole text as a double (strtod: also "nan", "inf", "1e300"); nullopt when it is no number.
std::optional<double> parse_real(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return x;
}

}  // namespace

std::string option_number_text(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

CLI::Validator whole_number(int64_t min, int64_t max, const std::string& what, const std::string& hint_above) {
  const std::string range = "a whole number from " + std::to_string(min) + " to " + std::to_string(max) + " (" + what + ")";
  const std::string above = hint_above.empty() ? "the bound is far beyond any real job (docs/hardening.md); a typo?" : hint_above;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> x = parse_real(text);
        if (!x) return "\"" + text + "\" is not a number: it takes " + range;
        if (!std::isfinite(*x) || *x != std::floor(*x)) return text + " is not allowed: it takes " + range;
        if (*x < static_cast<double>(min) || *x > static_cast<double>(max)) {
          return text + " is out of range: it takes " + range + "\nhint: " +
                 (*x > static_cast<double>(max) ? above : "give a value from " + std::to_string(min) + " up");
        }
        text = std::to_string(static_cast<int64_t>(*x));  // "8.0" or "1e3" converts as the integer
        return "";
      },
      "INT in [" + std::to_string(min) + " - " + std::to_string(max) + "]");
}

CLI::Validator real_number(double min, double max, const std::string& unit, bool min_excluded) {
  const std::string range = std::string("a finite number ") + (min_excluded ? "above " : "from ") + option_number_text(min) +
                            (min_excluded ? " up to " : " to ") + option_number_text(max) + (unit.empty() ? "" : " (" + unit + ")");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> x = parse_real(text);
        if (!x) return "\"" + text + "\" is not a number: it takes " + range;
        const bool below = min_excluded ? !(*x > min) : !(*x >= min);
        if (!std::isfinite(*x) || below || *x > max) return text + " is not allowed: it takes " + range;
        return "";
      },
      "FLOAT in (" + option_number_text(min) + " - " + option_number_text(max) + "]");
}

std::optional<int64_t> parse_token_count(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  const int64_t scale = suffix == 'K' ? int64_t{1} << 10 : suffix == 'M' ? int64_t{1} << 20 : 1;
  const std::optional<double> x = parse_real(scale == 1 ? text : text.substr(0, text.size() - 1));
  const double max = static_cast<double>(limits::kMaxBatch) * static_cast<double>(limits::kMaxSeqLen);
  if (!x || !std::isfinite(*x) || *x < 1 || *x * static_cast<double>(scale) > max) return std::nullopt;
  const double tokens = *x * static_cast<double>(scale);
  if (tokens != std::floor(tokens)) return std::nullopt;
  return static_cast<int64_t>(tokens);
}

CLI::Validator token_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<int64_t> tokens = parse_token_count(text);
        if (!tokens) {
          return "\"" + text + "\" is not a token count: it takes a whole number from 1 to " +
                 std::to_string(limits::kMaxBatch * limits::kMaxSeqLen) + ", or one with K (x 1024) or M (x 1048576), e.g. 4M";
        }
        text = std::to_string(*tokens);
        return "";
      },
      "TOKENS[K|M]");
}

std::string parse_error_message(const CLI::ParseError& error, const CLI::App* command) {
  std::string message = error.what();
  // CLI11: "Could not convert: --steps = abc" (an option without a trainsim check).
  static const std::regex conversion(R"(Could not convert: (\S+) = (.*))");
  std::smatch m;
  if (std::regex_match(message, m, conversion)) {
    message = m[1].str() + ": \"" + m[2].str() + "\" is not a number of the kind it takes";
  }
  // CLI11: "The following arguments were not expected: 2 --tpp"; a flag there is likely a typo.
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr && command != nullptr) {
    std::vector<std::string> flags;
    for (const CLI::Option* option : command->get_options()) {
      for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    }
    for (const std::string& extra : command->remaining()) {
      const std::string near = extra.rfind("--", 0) == 0 ? nearest_name(extra, flags) : "";
      if (!near.empty()) return message + "\nhint: " + extra + " is not an option of " + command->get_name() + "; did you mean " + near + "?";
    }
  }
  if (message.find("hint: ") == std::string::npos) {
    message += "\nhint: `trainsim " + (command != nullptr ? command->get_name() : std::string("COMMAND")) +
               " --help` lists every option and what it takes";
  }
  return message;
}

CLI::Validator cuda_graphs_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_cuda_graph_list(text);
        } catch (const InputError&) {
          return text + " is not a CUDA graph scope or a comma-separated list of them (" + cuda_graph_names() + ")";
        }
        return "";
      },
      "SCOPE[,SCOPE...]");
}

}  // namespace trainsim
