// The host side of an MoE layer's dispatch on the GPU: from this rank's routing, dispatch layout
// and what the EP group sends it (runtime/moe_routing.hpp, the CPU runtime's own functions), the
// index maps that the kernels of kernels/cuda/moe.cuh follow to move token rows between
// the three orders the layer uses: tokens (T rows), copies grouped by expert (C = T x k rows, the
// dispatch's send order) and rows received per source rank (R rows; regrouped expert-major for the
// experts' GEMMs). Pure host arithmetic, tested without a GPU (tests/gpu/test_cuda_moe.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/moe_routing.hpp"

namespace trainsim::cuda {

struct MoeIndexMaps {
  std::vector<int32_t> token_of_row;      // (C) permuted row i is a copy of token token_of_row[i] (= slot / k)
  std::vector<int32_t> row_of_slot;       // (C) copy slot s = t x k + j is permuted row row_of_slot[s] (the inverse of layout.slot)
  std::vector<int32_t> expert_of_slot;    // (C) the expert of copy slot s (routing.expert)
  std::vector<float> weight_of_slot;      // (C) its router weight (routing.weight, slot order)
  std::vector<float> weight_of_row;       // (C) the router weight of permuted row i's copy
  std::vector<int32_t> received_row;      // (R) expert-major row i is received row received_row[i] (batches.row)
  std::vector<int32_t> expert_major_row;  // (R) received row r is expert-major row expert_major_row[r] (its inverse)
};

MoeIndexMaps index_maps(const runtime::Routing& routing, const runtime::DispatchLayout& layout, const runtime::ExpertBatches& batches);

// First expert-major row of each local expert (its rows are [first[j], first[j] + expert_rows[j])).
std::vector<int64_t> expert_first_rows(const runtime::ExpertBatches& batches);

// Rows an EP rank can receive for its experts under dropless routing, at most: each of the group's
// `ep` ranks sends its T tokens' copies, of which at most min(k, experts / ep) reach one rank.
int64_t max_received_rows(int64_t tokens, int64_t top_k, int64_t experts, int64_t ep);

}  // namespace trainsim::cuda
