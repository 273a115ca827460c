// The nearest known flag (interop/flag_suggestion.hpp).
#include "interop/flag_suggestion.hpp"

#include <algorithm>

#include "common/nearest_name.hpp"

namespace trainsim {

std::optional<std::string> nearest_flag(const std::string& name, const std::vector<std::string>& known) {
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
  const std::optional<std::string> nearest = nearest_flag(name, known);
  return nearest ? name + " (did you mean " + *nearest + "?)" : name;
}

}  // namespace trainsim
