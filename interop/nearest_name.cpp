// Edit distance and the nearest known name.
#include "interop/nearest_name.hpp"

#include <algorithm>

namespace trainsim {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);  // row[j]: distance between a[0, i) and b[0, j)
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];  // distance between a[0, i-1) and b[0, j-1)
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest_name(const std::string& name, const std::vector<std::string>& known) {
  constexpr size_t kMaxEdits = 3;
  constexpr size_t kCharactersPerEdit = 5;
  const size_t allowed = std::min(kMaxEdits, name.size() / kCharactersPerEdit);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& candidate : known) {
    const size_t d = edit_distance(name, candidate);
    if (d == 0) return std::nullopt;
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string with_suggestion(const std::string& name, const std::vector<std::string>& known) {
  const std::optional<std::string> nearest = nearest_name(name, known);
  return nearest ? name + " (did you mean " + *nearest + "?)" : name;
}

}  // namespace trainsim
