// Splitting a launch script into words and flags; strict integer values.
#include "interop/launch_args.hpp"

#include <cctype>
#include <map>
#include <sstream>

#include "common/errors.hpp"

namespace trainsim {

namespace {

bool is_name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || (!first && std::isdigit(static_cast<unsigned char>(c)) != 0);
}

// $NAME, ${NAME}, ${NAME:-default} and ${NAME-default} with the variables the script set so far;
// a variable it did not set stays as written (a value that names it is then reported as malformed).
std::string substitute(const std::string& word, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '$' || i + 1 == word.size()) {
      out += word[i];
      continue;
    }
    const bool braced = word[i + 1] == '{';
    size_t end = braced ? word.find('}', i) : i + 1;
    if (end == std::string::npos) {
      out += word.substr(i);
      break;
    }
    std::string name, fallback;
    bool has_fallback = false;
    if (braced) {
      const std::string inner = word.substr(i + 2, end - i - 2);
      size_t op = inner.find(":-"), skip = 2;
      if (op == std::string::npos) op = inner.find('-'), skip = 1;
      name = inner.substr(0, op);
      has_fallback = op != std::string::npos;
      if (has_fallback) fallback = inner.substr(op + skip);
    } else {
      while (end < word.size() && is_name_char(word[end], end == i + 1)) ++end;
      name = word.substr(i + 1, end - i - 1);
      --end;  // the last character of the name
    }
    const auto it = vars.find(name);
    if (it != vars.end()) out += it->second;
    else if (has_fallback) out += fallback;
    else out += word.substr(i, end - i + 1);
    i = end;
  }
  return out;
}

// `NAME=value` (a shell assignment) -> the name; "" otherwise.
std::string assigned_name(const std::string& word) {
  const size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return "";
  for (size_t i = 0; i < eq; ++i) {
    if (!is_name_char(word[i], i == 0)) return "";
  }
  return word.substr(0, eq);
}

// Shell-like split: quotes group, `\` + newline joins lines, `#` at a word's start comments out
// the rest of the line.
std::vector<std::string> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      else word += c;
    } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      while (i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) ++i;
    } else if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ';') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      if (c == '"' || c == '\'') quote = c;
      else word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace

std::vector<std::string> launch_words(const std::string& text) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> words;
  for (const std::string& raw : split_shell_words(text)) {
    if (raw == "\\") continue;
    const std::string name = assigned_name(raw);
    if (!name.empty()) {
      vars[name] = substitute(raw.substr(name.size() + 1), vars);
      continue;
    }
    const std::string expanded = substitute(raw, vars);
    if (raw.find('$') == std::string::npos) {
      words.push_back(expanded);
      continue;
    }
    std::istringstream split(expanded);  // an expanded variable splits into words, as in the shell
    for (std::string w; split >> w;) words.push_back(w);
  }
  return words;
}

std::vector<LaunchFlag> launch_flags(const std::vector<std::string>& words, const std::set<std::string>& switches) {
  std::vector<LaunchFlag> flags;
  auto is_flag = [](const std::string& w) { return w.size() > 2 && w.rfind("--", 0) == 0; };
  for (size_t i = 0; i < words.size(); ++i) {
    if (!is_flag(words[i])) continue;
    const size_t eq = words[i].find('=');
    if (eq != std::string::npos) {
      flags.push_back({words[i].substr(0, eq), words[i].substr(eq + 1), {}});
    } else if (switches.count(words[i]) == 0 && i + 1 < words.size() && !is_flag(words[i + 1])) {
      flags.push_back({words[i], words[i + 1], {}});
      for (++i; i + 1 < words.size() && !is_flag(words[i + 1]); ++i) flags.back().more.push_back(words[i + 1]);
    } else {
      flags.push_back({words[i], std::nullopt, {}});
    }
  }
  return flags;
}

int64_t parse_count(const std::string& file, const std::string& key, const std::string& text, int64_t min_value,
                    int64_t max_value) {
  size_t used = 0;
  int64_t value = 0;
  bool ok = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) != 0 || text[0] == '-');
  if (ok) {
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != text.size()) {
    throw InputError(file + ": " + key + ": \"" + text + "\" is not an integer",
                     text.find('$') != std::string::npos ? "the script takes it from the environment; write the number, or give it as a trainsim flag"
                                                         : "write a whole number");
  }
  if (value < min_value || value > max_value) {
    throw InputError(file + ": " + key + ": " + text + " must be from " + std::to_string(min_value) + " to " + std::to_string(max_value),
                     value < min_value ? "write a value the framework accepts (sizes and batches start at 1)"
                                       : "the bound is far beyond any real job (docs/hardening.md); a typo?");
  }
  return value;
}

}  // namespace trainsim
