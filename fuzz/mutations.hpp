// Seeded, deterministic mutations of reader inputs for fuzz/mutation_driver.cpp: byte-level ones
// (bit flips, inserts, deletes, duplicated ranges, truncation, splices of two seeds), number tokens
// replaced by edge values (works on JSON, TOML and shell alike), JSON-tree ones (a value replaced
// by an edge value or another type, a key deleted or added, an array emptied or grown), and 8-byte
// integer overwrites for binary files. The same seed gives the same sequence on every machine:
// only the generator below and integer arithmetic pick (no std:: distributions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::fuzz {

// SplitMix64: small, fast, and its output is fixed by its definition (Steele et al. 2014).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next();
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }  // [0, n)
  bool one_in(size_t n) { return below(n) == 0; }

 private:
  uint64_t state_;
};

// The kind of file a seed is, which decides the mutations that fit it.
enum class SeedKind { kJson, kText, kBinary };
SeedKind seed_kind(const std::string& bytes);

// One to four stacked mutations of `seed`; `corpus` supplies the second seed of a splice.
// The result is cut to `max_bytes`.
std::string mutate(const std::string& seed, const std::vector<std::string>& corpus, Random& random, size_t max_bytes);

}  // namespace trainsim::fuzz
