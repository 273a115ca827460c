// runtime/context_chunks.hpp: which chunks and positions of a sequence a CP rank holds.
#include "runtime/context_chunks.hpp"

#include <cstddef>

#include "common/errors.hpp"

namespace trainsim::runtime {

ContextChunks context_chunks(int64_t cp, int64_t cp_rank) { return {cp_rank, 2 * cp - 1 - cp_rank}; }

std::vector<int32_t> context_positions(int64_t seq, int64_t cp, int64_t cp_rank) {
  if (cp == 1) {  // the whole sequence in order (the two chunks when seq is even)
    std::vector<int32_t> all(static_cast<size_t>(seq));
    for (int64_t p = 0; p < seq; ++p) all[static_cast<size_t>(p)] = static_cast<int32_t>(p);
    return all;
  }
  TRAINSIM_ASSERT(seq % (2 * cp) == 0, "context parallelism needs seq_len divisible by 2 x cp");
  const int64_t chunk = seq / (2 * cp);
  const ContextChunks chunks = context_chunks(cp, cp_rank);
  std::vector<int32_t> positions;
  for (int64_t index : {chunks.first, chunks.second}) {
    for (int64_t i = 0; i < chunk; ++i) positions.push_back(static_cast<int32_t>(index * chunk + i));
  }
  return positions;
}

}  // namespace trainsim::runtime
