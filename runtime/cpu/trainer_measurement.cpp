// The CPU trainer's measurement (runtime/cpu/trainer_impl.hpp): per op category, per stage, memory.
#include "runtime/cpu/trainer_impl.hpp"

#include <algorithm>

#include "common/units.hpp"
#include "runtime/training_loop.hpp"

namespace trainsim::cpu {

// The op clock's totals for the iteration: the optimizer phase, and each compute phase's time
// outside every timed op as "other".
OpCategoryTimes Trainer::Impl::finished_op_times() const {
  OpCategoryTimes t = ops.seconds;
  const auto other = [](const std::array<double, kOpCategoryCount>& column, double phase_s) {
    double timed = 0;
    for (size_t c = 0; c < kOpCategoryCount; ++c) {
      if (c != static_cast<size_t>(OpCategory::kTpComm) && c != static_cast<size_t>(OpCategory::kEpComm)) timed += column[c];
    }
    return std::max(0.0, phase_s - timed);
  };
  t.forward_s[static_cast<size_t>(OpCategory::kOther)] = other(t.forward_s, clock.forward_s);
  t.backward_s[static_cast<size_t>(OpCategory::kOther)] = other(t.backward_s, clock.backward_s);
  t.forward_s[static_cast<size_t>(OpCategory::kOptimizer)] = clock.optimizer_s;
  return t;
}

// Rank 0 learns each pipeline stage's per-op-category medians (from TP rank 0, CP rank 0 of DP replica 0).
std::vector<OpCategoryTimes> Trainer::Impl::gather_stage_op_times(const OpCategoryTimes& mine) const {
  constexpr size_t kWidth = 2 * kOpCategoryCount + 2;
  std::vector<double> row(kWidth);
  std::copy(mine.forward_s.begin(), mine.forward_s.end(), row.begin());
  std::copy(mine.backward_s.begin(), mine.backward_s.end(), row.begin() + kOpCategoryCount);
  row[kWidth - 2] = static_cast<double>(grid.pp_rank);
  row[kWidth - 1] = grid.tp_rank == 0 && grid.cp_rank == 0 && grid.dp_rank == 0 ? 1.0 : 0.0;
  std::vector<double> all(grid.world_rank == 0 ? kWidth * static_cast<size_t>(grid.world_size) : 0);
  MPI_Gather(row.data(), static_cast<int>(kWidth), MPI_DOUBLE, all.data(), static_cast<int>(kWidth), MPI_DOUBLE, 0, grid.world);
  std::vector<OpCategoryTimes> stages(static_cast<size_t>(plan.pp));
  for (size_t r = 0; grid.world_rank == 0 && r < static_cast<size_t>(grid.world_size); ++r) {
    const double* from = all.data() + r * kWidth;
    if (from[kWidth - 1] == 0.0) continue;
    OpCategoryTimes& t = stages[static_cast<size_t>(from[kWidth - 2])];
    std::copy(from, from + kOpCategoryCount, t.forward_s.begin());
    std::copy(from + kOpCategoryCount, from + 2 * kOpCategoryCount, t.backward_s.begin());
  }
  return stages;
}

void Trainer::Impl::record_memory(Measurement& m) const {
  const std::vector<double> largest = runtime::largest_over_ranks(grid.world, {static_cast<double>(memory.peak_bytes()), runtime::peak_resident_bytes()});
  m.memory_peak_gib = bytes_to_gib(largest[0]);
  m.memory_rss_peak_gib = bytes_to_gib(largest[1]);
}

}  // namespace trainsim::cpu
