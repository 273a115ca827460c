// plan_gradient_buckets; see gradient_buckets.hpp.
#include "runtime/cuda/gradient_buckets.hpp"

#include <cstddef>

namespace trainsim::cuda {

GradientBuckets plan_gradient_buckets(const std::vector<std::pair<int64_t, int64_t>>& layer_ranges, int64_t padded_count,
                                      int64_t bucket_bytes) {
  GradientBuckets out;
  const int64_t layers = static_cast<int64_t>(layer_ranges.size());
  if (layers == 0) {
    out.outer_ranges.emplace_back(0, padded_count);
    return out;
  }
  out.outer_ranges.emplace_back(0, layer_ranges.front().first);
  out.outer_ranges.emplace_back(layer_ranges.back().second, padded_count);
  for (int64_t l = layers - 1; l >= 0; --l) {
    const auto [begin, end] = layer_ranges[static_cast<size_t>(l)];
    std::vector<GradientBucket>& buckets = out.buckets;
    if (buckets.empty() || (buckets.back().end - buckets.back().begin) * static_cast<int64_t>(sizeof(float)) >= bucket_bytes) {
      buckets.push_back({begin, end, l, false});
    } else {
      buckets.back().begin = begin;
      buckets.back().ready_after = l;
    }
  }
  return out;
}

}  // namespace trainsim::cuda
