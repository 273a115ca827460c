// Levenshtein distance and nearest-candidate suggestion.
#include "common/nearest_name.hpp"

#include <algorithm>
#include <cctype>

namespace trainsim {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  const size_t longer = std::max(name.size(), best.size());
  const size_t allowed = std::max<size_t>(2, longer / 3);
  return best_distance <= allowed ? best : std::string();
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string best = nearest_name(name, candidates);
  return best.empty() ? std::string() : " (did you mean \"" + best + "\"?)";
}

std::vector<std::string> similar_names(std::string_view name, const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  auto lower = [](std::string_view text) {
    std::string s(text);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string prefix = lower(name);
  for (const auto& candidate : candidates) {
    if (!prefix.empty() && lower(candidate).rfind(prefix, 0) == 0) out.push_back(candidate);
  }
  if (out.empty()) {
    const std::string best = nearest_name(name, candidates);
    if (!best.empty()) out.push_back(best);
  }
  return out;
}

std::string did_you_mean_any(std::string_view name, const std::vector<std::string>& candidates) {
  const std::vector<std::string> names = similar_names(name, candidates);
  if (names.empty()) return std::string();
  std::string text = " (did you mean ";
  for (size_t i = 0; i < names.size(); ++i) text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
  return text + "?)";
}

std::string join_names(const std::vector<std::string>& names, std::string_view separator) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += separator;
    text += names[i];
  }
  return text;
}

}  // namespace trainsim
