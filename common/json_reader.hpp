// Strict reading of human-written JSON: every read names the file and the JSON path, every
// problem is collected (not thrown one by one), and keys nobody asked for are reported with the
// nearest valid name. `null` reads as "not given" (published-run files use it for "not stated").
// Only loaders include this header; after loading, nothing reads JSON again (STYLE.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/problem_list.hpp"

namespace trainsim {

// Reads and parses a JSON file; a missing file or a syntax error throws InputError naming the
// file (and the line and column of the syntax error).
nlohmann::json load_json_file(const std::string& path);
// Same for text already in memory (`source` names it in messages).
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

class JsonObjectReader {
 public:
  // `pointer` is the JSON pointer of `value` inside the file ("" for the root).
  JsonObjectReader(const nlohmann::json& value, std::string file, std::string pointer, ProblemList& problems);

  bool ok() const { return is_object_; }
  bool has(const std::string& key) const;  // present and not null

  std::optional<int64_t> optional_int(const std::string& key, int64_t min_value);
  int64_t required_int(const std::string& key, int64_t min_value);
  std::optional<double> optional_number(const std::string& key, double min_value);
  double required_number(const std::string& key, double min_value);
  std::optional<bool> optional_bool(const std::string& key);
  std::optional<std::string> optional_string(const std::string& key);
  std::string required_string(const std::string& key);
  // A list of strings (it may be empty); nullopt when absent or null.
  std::optional<std::vector<std::string>> optional_string_list(const std::string& key);
  // A list of integers, each >= min_value (it may be empty); nullopt when absent or null.
  std::optional<std::vector<int64_t>> optional_int_list(const std::string& key, int64_t min_value);
  // A string that must be one of `choices` (the message lists them).
  std::optional<std::string> optional_choice(const std::string& key, const std::vector<std::string>& choices);
  std::string required_choice(const std::string& key, const std::vector<std::string>& choices);
  // A nested object; nullopt when absent or null.
  std::optional<JsonObjectReader> optional_object(const std::string& key);
  // A nested object that must be there; a missing or non-object value is a problem, and the
  // returned reader then reads nothing (every read on it yields its default).
  JsonObjectReader required_object(const std::string& key);
  // A list of objects that must be there (it may be empty): one reader per element.
  std::vector<JsonObjectReader> required_object_list(const std::string& key);
  // Accepts the key without reading it (documentation fields such as "source").
  void accept(const std::string& key) { known_.push_back(key); }

  // Reports every key that was never read or accepted, with the nearest known key.
  void reject_unknown_keys();

  // "file: /pointer/key" — the prefix of every message about `key`.
  std::string where(const std::string& key) const;
  void add_problem(const std::string& key, const std::string& message);
  const std::string& file() const { return file_; }
  ProblemList& problems() { return *problems_; }

 private:
  const nlohmann::json* find(const std::string& key);  // records the key as known

  const nlohmann::json* value_;
  std::string file_;
  std::string pointer_;
  ProblemList* problems_;
  bool is_object_;
  std::vector<std::string> known_;
};

}  // namespace trainsim
