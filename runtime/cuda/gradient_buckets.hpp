// The DP reduction plan of a GPU stage's flat gradient buffer (host only): layer buckets of about
// `bucket_bytes` from the last layer down, each started once its lowest layer's backward is done,
// and the outer ranges (embeddings, final norm and the padding around the layers), reduced after
// the tied-embedding and SP sums. Together they cover [0, padded_count) exactly once.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace trainsim::cuda {

struct GradientBucket {
  int64_t begin = 0, end = 0;  // elements of the flat gradient buffer
  int64_t ready_after = 0;     // the local layer whose backward completes it (its lowest)
  bool launched = false;       // this iteration's all-reduce has been enqueued
};

struct GradientBuckets {
  std::vector<GradientBucket> buckets;                     // in launch order (last layer first)
  std::vector<std::pair<int64_t, int64_t>> outer_ranges;  // [begin, end), possibly empty
};

// layer_ranges: [begin, end) elements of each local layer (ParamLayout), ascending and disjoint.
GradientBuckets plan_gradient_buckets(const std::vector<std::pair<int64_t, int64_t>>& layer_ranges, int64_t padded_count,
                                      int64_t bucket_bytes);

}  // namespace trainsim::cuda
