// The fuzz targets the mutation driver runs, each with its seed corpus: files of the repository
// (test data and configs) named relative to its root, plus seeds made at start where no file has
// them (a valid checkpoint, written by the runtime's own writer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::fuzz {

using TargetFunction = int (*)(const uint8_t*, size_t);

struct FuzzTarget {
  std::string name;  // as in fuzz/CMakeLists.txt and fuzz/regressions/<name>/
  TargetFunction run;
  // Files or folders (searched recursively) under the source root; only files ending in one of
  // `extensions` are taken from folders.
  std::vector<std::string> seed_paths;
  std::vector<std::string> extensions;
};

const std::vector<FuzzTarget>& fuzz_targets();

// The seeds of `target`: its files (sorted, so the order is the same everywhere) and made ones.
std::vector<std::string> load_seeds(const FuzzTarget& target, const std::string& root);

std::string read_file_bytes(const std::string& path);

}  // namespace trainsim::fuzz
