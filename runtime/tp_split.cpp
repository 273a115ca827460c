// Row and block-column slices of a full tensor; see tp_split.hpp.
#include "runtime/tp_split.hpp"

#include "common/errors.hpp"

namespace trainsim::runtime {

Matrix row_slice(const Matrix& full, int64_t parts, int64_t index) {
  TRAINSIM_ASSERT(parts >= 1 && full.rows() % parts == 0 && index >= 0 && index < parts, "validate_plan keeps tp | the split dimension");
  const int64_t height = full.rows() / parts;
  return full.middleRows(index * height, height);
}

Matrix block_slice(const Matrix& full, const std::vector<int64_t>& widths, int64_t parts, int64_t index) {
  TRAINSIM_ASSERT(parts >= 1 && index >= 0 && index < parts, "a TP rank of the group");
  int64_t total = 0, all = 0;
  for (int64_t w : widths) {
    TRAINSIM_ASSERT(w % parts == 0, "validate_plan keeps tp | every fused block");
    total += w / parts;
    all += w;
  }
  TRAINSIM_ASSERT(all == full.cols(), "the blocks cover the tensor's columns");
  Matrix out(full.rows(), total);
  int64_t from = 0, to = 0;
  for (int64_t w : widths) {
    out.middleCols(to, w / parts) = full.middleCols(from + index * (w / parts), w / parts);
    from += w;
    to += w / parts;
  }
  return out;
}

}  // namespace trainsim::runtime
