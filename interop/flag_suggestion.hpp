// "Did you mean" for an importer's flags and keys: the known flag nearest to a misspelt one, by
// edit distance (common/nearest_name.hpp), with a stricter bound than names of the catalog take. The importers name it beside a flag or
// key they do not know (`--sequence-paralel (did you mean --sequence-parallel?)`). It says nothing of
// what the names mean; the caller's tables do.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

// The name of `known` nearest to `name`, when it is close enough to be a misspelling: at most 3
// edits, and at most one edit per 5 characters of `name` (so `--tp` suggests nothing for `--pp`).
// Ties go to the first in `known`'s order; nullopt when none is close or `name` is itself known.
std::optional<std::string> nearest_flag(const std::string& name, const std::vector<std::string>& known);

// `name`, and " (did you mean X?)" when nearest_flag finds one.
std::string with_suggestion(const std::string& name, const std::vector<std::string>& known);

}  // namespace trainsim
