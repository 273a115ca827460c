// Strict JSON reading with collected problems and nearest-key suggestions.
#include "common/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "common/nearest_name.hpp"

namespace trainsim {

namespace {

std::string type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number_float()) return "a number with a fraction";
  if (v.is_array() || v.is_object()) return std::string("an ") + v.type_name();
  return std::string("a ") + v.type_name();
}

// Line and column of a byte offset, for syntax errors.
std::string line_and_column(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line L, column C: WHY; last read: '...'"
    std::string reason = e.what();
    const auto colon = reason.find(": ", reason.find("column"));
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    throw InputError(source + ": malformed JSON at " + line_and_column(text, e.byte > 0 ? e.byte - 1 : 0) + ": " +
                         reason,
                     "check the file with a JSON validator (e.g. `python3 -m json.tool FILE`)");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number literal beyond double's range ("1e400"): nlohmann names the literal, not its place.
    std::string reason = e.what();
    const auto open = reason.find('\''), close = reason.rfind('\'');
    std::string where;
    if (open != std::string::npos && close > open) {
      const std::string literal = reason.substr(open + 1, close - open - 1);
      const size_t at = text.find(literal);
      if (at != std::string::npos) where = " at " + line_and_column(text, at);
      reason = "the number " + literal + " is beyond the range of a double (about 1.8e308)";
    }
    throw InputError(source + ": malformed JSON" + where + ": " + reason,
                     "write a finite number; trainsim's sizes and rates are far below that range");
  }
}

nlohmann::json load_json_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InputError(path + ": is a folder, not a JSON file", "give the file inside it (a Hugging Face model folder: its config.json)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path + ": cannot open the file (it does not exist or is not readable)",
                     "check the path; relative paths are taken from the current directory");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), path);
}

JsonObjectReader::JsonObjectReader(const nlohmann::json& value, std::string file, std::string pointer,
                                   ProblemList& problems)
    : value_(&value), file_(std::move(file)), pointer_(std::move(pointer)), problems_(&problems),
      is_object_(value.is_object()) {
  if (!is_object_) {
    problems_->add(file_ + ": " + (pointer_.empty() ? "/" : pointer_) + ": expected a JSON object, got " +
                   type_name(value));
  }
}

std::string JsonObjectReader::where(const std::string& key) const { return file_ + ": " + pointer_ + "/" + key; }

void JsonObjectReader::add_problem(const std::string& key, const std::string& message) {
  problems_->add(where(key) + ": " + message);
}

const nlohmann::json* JsonObjectReader::find(const std::string& key) {
  known_.push_back(key);
  if (!is_object_) return nullptr;
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonObjectReader::has(const std::string& key) const {
  if (!is_object_) return false;
  const auto it = value_->find(key);
  return it != value_->end() && !it->is_null();
}

std::optional<int64_t> JsonObjectReader::optional_int(const std::string& key, int64_t min_value) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_float() && std::abs(v->get<double>()) >= 9.2e18 && std::floor(v->get<double>()) == v->get<double>()) {
    add_problem(key, "value " + v->dump() + " is too large (an integer up to 9223372036854775807)");
    return std::nullopt;
  }
  if (!v->is_number_integer()) {
    add_problem(key, "expected an integer >= " + std::to_string(min_value) + ", got " + type_name(*v) + " (" +
                         v->dump() + ")");
    return std::nullopt;
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    add_problem(key, "value " + v->dump() + " is too large");
    return std::nullopt;
  }
  const int64_t x = v->get<int64_t>();
  if (x < min_value) {
    add_problem(key, key + " (" + std::to_string(x) + ") must be >= " + std::to_string(min_value));
    return std::nullopt;
  }
  return x;
}

int64_t JsonObjectReader::required_int(const std::string& key, int64_t min_value) {
  if (is_object_ && !has(key)) {
    add_problem(key, "missing required key \"" + key + "\" (an integer >= " + std::to_string(min_value) + ")");
    known_.push_back(key);
    return min_value;
  }
  return optional_int(key, min_value).value_or(min_value);
}

std::optional<double> JsonObjectReader::optional_number(const std::string& key, double min_value) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    add_problem(key, "expected a number, got " + type_name(*v) + " (" + v->dump() + ")");
    return std::nullopt;
  }
  const double x = v->get<double>();
  if (!std::isfinite(x)) {  // a literal beyond double's range (1e400) parses as infinity
    add_problem(key, key + " (" + v->dump() + ") must be a finite number");
    return std::nullopt;
  }
  if (!(x >= min_value)) {
    add_problem(key, key + " (" + v->dump() + ") must be >= " + nlohmann::json(min_value).dump());
    return std::nullopt;
  }
  return x;
}

double JsonObjectReader::required_number(const std::string& key, double min_value) {
  if (is_object_ && !has(key)) {
    add_problem(key, "missing required key \"" + key + "\" (a number >= " + nlohmann::json(min_value).dump() + ")");
    known_.push_back(key);
    return min_value;
  }
  return optional_number(key, min_value).value_or(min_value);
}

std::optional<bool> JsonObjectReader::optional_bool(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    add_problem(key, "expected true or false, got " + type_name(*v) + " (" + v->dump() + ")");
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> JsonObjectReader::optional_string(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    add_problem(key, "expected a string, got " + type_name(*v) + " (" + v->dump() + ")");
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<std::vector<std::string>> JsonObjectReader::optional_string_list(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  const bool strings = v->is_array() && std::all_of(v->begin(), v->end(), [](const nlohmann::json& x) { return x.is_string(); });
  if (!strings) {
    add_problem(key, "expected a list of strings, got " + type_name(*v) + " (" + v->dump() + ")");
    return std::nullopt;
  }
  return v->get<std::vector<std::string>>();
}

std::optional<std::vector<int64_t>> JsonObjectReader::optional_int_list(const std::string& key, int64_t min_value) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  const bool ints = v->is_array() && std::all_of(v->begin(), v->end(), [](const nlohmann::json& x) { return x.is_number_integer(); });
  if (!ints) {
    add_problem(key, "expected a list of integers, got " + type_name(*v) + " (" + v->dump() + ")");
    return std::nullopt;
  }
  std::vector<int64_t> out;
  for (const nlohmann::json& x : *v) {
    const int64_t n = x.get<int64_t>();
    if (n < min_value) {
      add_problem(key, "every element must be >= " + std::to_string(min_value) + " (one is " + std::to_string(n) + ")");
      return std::nullopt;
    }
    out.push_back(n);
  }
  return out;
}

std::string JsonObjectReader::required_string(const std::string& key) {
  if (is_object_ && !has(key)) {
    add_problem(key, "missing required key \"" + key + "\" (a string)");
    known_.push_back(key);
    return {};
  }
  return optional_string(key).value_or(std::string());
}

std::optional<std::string> JsonObjectReader::optional_choice(const std::string& key,
                                                             const std::vector<std::string>& choices) {
  const std::optional<std::string> s = optional_string(key);
  if (!s) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *s) == choices.end()) {
    add_problem(key, "\"" + *s + "\" is not one of: " + join_names(choices) + did_you_mean(*s, choices));
    return std::nullopt;
  }
  return s;
}

std::string JsonObjectReader::required_choice(const std::string& key, const std::vector<std::string>& choices) {
  if (is_object_ && !has(key)) {
    add_problem(key, "missing required key \"" + key + "\" (one of: " + join_names(choices) + ")");
    known_.push_back(key);
    return choices.front();
  }
  return optional_choice(key, choices).value_or(choices.front());
}

std::optional<JsonObjectReader> JsonObjectReader::optional_object(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  return JsonObjectReader(*v, file_, pointer_ + "/" + key, *problems_);
}

JsonObjectReader JsonObjectReader::required_object(const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* v = find(key);
  if (v == nullptr) {
    if (is_object_) add_problem(key, "missing required key \"" + key + "\" (an object)");
    JsonObjectReader absent(kEmpty, file_, pointer_ + "/" + key, *problems_);
    absent.is_object_ = false;  // reads nothing and reports nothing more
    return absent;
  }
  return JsonObjectReader(*v, file_, pointer_ + "/" + key, *problems_);
}

std::vector<JsonObjectReader> JsonObjectReader::required_object_list(const std::string& key) {
  std::vector<JsonObjectReader> elements;
  const nlohmann::json* v = find(key);
  if (v == nullptr) {
    if (is_object_) add_problem(key, "missing required key \"" + key + "\" (a list of objects)");
    return elements;
  }
  if (!v->is_array()) {
    add_problem(key, "expected a list of objects, got " + type_name(*v));
    return elements;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    elements.emplace_back((*v)[i], file_, pointer_ + "/" + key + "/" + std::to_string(i), *problems_);
  }
  return elements;
}

void JsonObjectReader::reject_unknown_keys() {
  if (!is_object_) return;
  for (const auto& [key, value] : value_->items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::vector<std::string> known_sorted = known_;
    std::sort(known_sorted.begin(), known_sorted.end());
    known_sorted.erase(std::unique(known_sorted.begin(), known_sorted.end()), known_sorted.end());
    problems_->add(where(key) + ": unknown key \"" + key + "\"" + did_you_mean(key, known_sorted) +
                   "; valid keys here: " + join_names(known_sorted));
  }
}

}  // namespace trainsim
