// index_maps and the dispatch sizes; see moe_index_maps.hpp.
#include "runtime/cuda/moe_index_maps.hpp"

#include <algorithm>
#include <limits>

#include "common/errors.hpp"

namespace trainsim::cuda {

namespace {

int32_t to_index(int64_t i) {
  TRAINSIM_ASSERT(i >= 0 && i <= std::numeric_limits<int32_t>::max(), "MoE index maps: row indices fit int32");
  return static_cast<int32_t>(i);
}

}  // namespace

MoeIndexMaps index_maps(const runtime::Routing& routing, const runtime::DispatchLayout& layout, const runtime::ExpertBatches& batches) {
  const int64_t k = routing.top_k, copies = static_cast<int64_t>(layout.slot.size());
  TRAINSIM_ASSERT(copies == static_cast<int64_t>(routing.expert.size()) && copies == routing.weight.size(),
                  "MoE index maps: one dispatch slot per routed copy");
  MoeIndexMaps m;
  m.token_of_row.resize(static_cast<size_t>(copies));
  m.row_of_slot.resize(static_cast<size_t>(copies));
  m.weight_of_row.resize(static_cast<size_t>(copies));
  m.expert_of_slot.assign(routing.expert.begin(), routing.expert.end());
  m.weight_of_slot.assign(routing.weight.data(), routing.weight.data() + copies);  // row-major (T, k): slot order
  for (int64_t i = 0; i < copies; ++i) {
    const int64_t slot = layout.slot[static_cast<size_t>(i)];
    m.token_of_row[static_cast<size_t>(i)] = to_index(slot / k);
    m.row_of_slot[static_cast<size_t>(slot)] = to_index(i);
    m.weight_of_row[static_cast<size_t>(i)] = m.weight_of_slot[static_cast<size_t>(slot)];
  }
  const size_t received = batches.row.size();
  m.received_row.resize(received);
  m.expert_major_row.resize(received);
  for (size_t i = 0; i < received; ++i) {
    const int64_t r = batches.row[i];
    m.received_row[i] = to_index(r);
    m.expert_major_row[static_cast<size_t>(r)] = to_index(static_cast<int64_t>(i));
  }
  return m;
}

std::vector<int64_t> expert_first_rows(const runtime::ExpertBatches& batches) {
  std::vector<int64_t> first(batches.expert_rows.size(), 0);
  for (size_t j = 1; j < first.size(); ++j) first[j] = first[j - 1] + batches.expert_rows[j - 1];
  return first;
}

int64_t max_received_rows(int64_t tokens, int64_t top_k, int64_t experts, int64_t ep) {
  TRAINSIM_ASSERT(ep >= 1 && experts % ep == 0, "check_expert_parallel keeps ep | experts");
  return ep * tokens * std::min(top_k, experts / ep);
}

}  // namespace trainsim::cuda
