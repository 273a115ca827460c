// "Did you mean ...?" for unknown keys and names: the closest candidate by edit distance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` (case-insensitive Levenshtein), or "" when none is close
// enough to be a plausible typo (distance more than a third of the longer name, at least 2).
std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates);

// " (did you mean \"x\"?)" or "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

// The candidates `name` begins (case-insensitive: "h100" -> every H100 of a catalog), else the
// nearest one by nearest_name, else none; in the candidates' order.
std::vector<std::string> similar_names(std::string_view name, const std::vector<std::string>& candidates);
// " (did you mean \"a\" or \"b\"?)" of similar_names, or "".
std::string did_you_mean_any(std::string_view name, const std::vector<std::string>& candidates);

// "a, b, c" for listing the valid choices in a message.
std::string join_names(const std::vector<std::string>& names, std::string_view separator = ", ");

}  // namespace trainsim
