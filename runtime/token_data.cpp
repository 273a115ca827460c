// Byte-level training data; see token_data.hpp.
#include "runtime/token_data.hpp"

#include <fstream>
#include <iterator>
#include <random>

#include "common/errors.hpp"

namespace trainsim::runtime {

std::vector<uint8_t> load_corpus(const std::string& path, int64_t min_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("--data: cannot open " + path, "give a text file, or rebuild trainsim to regenerate its corpus");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (static_cast<int64_t>(bytes.size()) < min_bytes) {
    throw InputError("--data: " + path + " has " + std::to_string(bytes.size()) + " bytes; at least " +
                     std::to_string(min_bytes) + " are needed for one sequence");
  }
  return bytes;
}

TokenBatch token_batch(const std::vector<uint8_t>& corpus, uint64_t seed, int64_t iteration, int64_t first_sequence,
                       int64_t sequences, int64_t seq_len) {
  TokenBatch batch;
  batch.tokens.reserve(static_cast<size_t>(sequences * seq_len));
  batch.targets.reserve(static_cast<size_t>(sequences * seq_len));
  const uint64_t starts = static_cast<uint64_t>(corpus.size()) - static_cast<uint64_t>(seq_len) - 1;
  for (int64_t j = 0; j < sequences; ++j) {
    const uint64_t sequence = static_cast<uint64_t>(first_sequence + j);
    std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(iteration) * 7919ull + sequence);
    const int64_t start = static_cast<int64_t>(rng() % starts);
    for (int64_t i = 0; i < seq_len; ++i) {
      batch.tokens.push_back(corpus[static_cast<size_t>(start + i)]);
      batch.targets.push_back(corpus[static_cast<size_t>(start + i + 1)]);
    }
  }
  return batch;
}

}  // namespace trainsim::runtime
