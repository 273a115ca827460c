// Context parallelism's split of a sequence, which both backends follow: 2 x cp chunks, CP rank r
// holding chunks r and 2cp - 1 - r (the causal load balancing of Megatron-Core / Transformer
// Engine), and the true positions of the rows a rank holds. Pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace trainsim::runtime {

// The two chunks (of 2 x cp per sequence) CP rank `cp_rank` holds: r and 2cp - 1 - r.
struct ContextChunks {
  int64_t first = 0, second = 1;
};
ContextChunks context_chunks(int64_t cp, int64_t cp_rank);

// The true positions of the seq / cp token rows CP rank `cp_rank` holds of each sequence, in the
// order it holds them (its first chunk, then its second). seq must be a multiple of 2 x cp when
// cp > 1; with cp 1, 0 .. seq - 1.
std::vector<int32_t> context_positions(int64_t seq, int64_t cp, int64_t cp_rank);

}  // namespace trainsim::runtime
