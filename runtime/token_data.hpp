// The training data every backend reads: byte-level tokens from a text corpus. Sequence j of
// iteration i starts at an offset drawn from (seed, i, j) alone, so the global batch is the same
// whatever the plan (parity between layouts and between backends rests on this).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::runtime {

struct TokenBatch {
  std::vector<int32_t> tokens, targets;  // sequences x seq_len, row-major
};

// The corpus as bytes (InputError naming the file when it is missing or shorter than min_bytes).
std::vector<uint8_t> load_corpus(const std::string& path, int64_t min_bytes);

// Sequences [first_sequence, first_sequence + sequences) of iteration `iteration`'s global batch.
TokenBatch token_batch(const std::vector<uint8_t>& corpus, uint64_t seed, int64_t iteration, int64_t first_sequence,
                       int64_t sequences, int64_t seq_len);

}  // namespace trainsim::runtime
