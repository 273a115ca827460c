// ZB-V's list scheduler; see zero_bubble_schedule.hpp.
//
// Each rank holds two model chunks placed in a V (place_of_virtual_stage): a micro-batch's forward
// runs chunk 0 from the first rank to the last, then chunk 1 from the last back to the first,
// where the loss is; its backward retraces the V. As in make_zero_bubble_schedule, every rank runs
// its passes in order of the time it could start them, earliest rank first, and a free rank picks:
//  1. B of chunk 1, then of chunk 0 (oldest micro-batch first), when its gradient has arrived;
//  2. F of chunk 1 when its input has arrived (the micro-batch is on its way back);
//  3. F of chunk 0 of a new micro-batch, when it has arrived, at most 2(p - i) - 1 micro-batches
//     ahead of the rank's chunk-1 forwards (rank i's share of the V's round trip: the warm-up of
//     zbv.py's try_v_schedule); either F only under the memory limit of 2p chunk activations
//     (1F1B's peak, zbv.py's max_mem);
//  4. W of its oldest B, when nothing above has arrived and W ends before the next arrival (or
//     the arrival is not yet known, or the limits block F): W fills what the V leaves idle.
// Otherwise it waits for the next arrival. At the end each rank runs its remaining W passes.
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "plan/list_schedule.hpp"
#include "plan/zero_bubble_schedule.hpp"

namespace trainsim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct RankState {
  double free_at = 0.0;
  double pending = 0.0;                 // activation memory held, in chunk micro-batches
  std::array<int64_t, 2> forwards{}, input_grads{};  // per chunk
  std::deque<std::pair<int64_t, int64_t>> weight_grads_due;  // (chunk, micro-batch) in B order
};

struct Choice {
  double start = kNever;
  StepKind kind = StepKind::kForward;
  int64_t chunk = 0;
};

struct VScheduler {
  int64_t ranks, micro_batches;
  ZeroBubbleCosts costs;  // one chunk's passes
  std::vector<RankState> state;
  // [chunk][rank][micro-batch]
  std::array<std::vector<std::vector<double>>, 2> forward_end, input_grad_end;

  double end_of(const std::vector<std::vector<double>>& ends, int64_t rank, int64_t mb) const {
    return ends[static_cast<size_t>(rank)][static_cast<size_t>(mb)];
  }

  // When rank j could start the next F of `chunk` (kNever: none left, or its input not computed yet).
  double forward_ready(int64_t j, int64_t chunk) const {
    const RankState& s = state[static_cast<size_t>(j)];
    const int64_t mb = s.forwards[static_cast<size_t>(chunk)];
    if (mb >= micro_batches) return kNever;
    if (chunk == 0) return j == 0 ? 0.0 : end_of(forward_end[0], j - 1, mb) + costs.p2p_s;
    if (mb >= s.forwards[0]) return kNever;
    return j == ranks - 1 ? end_of(forward_end[0], j, mb) : end_of(forward_end[1], j + 1, mb) + costs.p2p_s;
  }

  // When rank j could start the next B of `chunk`: chunk 1's gradient comes from the rank before
  // (the first rank: its own loss), chunk 0's from the rank after (the last rank: its chunk 1).
  double input_grad_ready(int64_t j, int64_t chunk) const {
    const RankState& s = state[static_cast<size_t>(j)];
    const int64_t mb = s.input_grads[static_cast<size_t>(chunk)];
    if (chunk == 1) {
      if (mb >= s.forwards[1]) return kNever;
      return j == 0 ? end_of(forward_end[1], j, mb) : end_of(input_grad_end[1], j - 1, mb) + costs.p2p_s;
    }
    if (mb >= s.input_grads[1]) return kNever;
    return j == ranks - 1 ? end_of(input_grad_end[1], j, mb) : end_of(input_grad_end[0], j + 1, mb) + costs.p2p_s;
  }

  bool memory_allows_forward(const RankState& s) const { return s.pending + 1.0 <= static_cast<double>(2 * ranks) + 1e-9; }

  Choice choose(int64_t j) const {
    const RankState& s = state[static_cast<size_t>(j)];
    const double now = s.free_at;
    const bool fits = memory_allows_forward(s);
    const bool f1_allowed = fits, f0_allowed = fits && s.forwards[0] - s.forwards[1] < 2 * (ranks - j) - 1;
    // In priority order; the first that can start now wins, else the earliest arrival.
    const std::array<Choice, 4> candidates{
        Choice{input_grad_ready(j, 1), StepKind::kBackward, 1}, Choice{input_grad_ready(j, 0), StepKind::kBackward, 0},
        Choice{f1_allowed ? forward_ready(j, 1) : kNever, StepKind::kForward, 1},
        Choice{f0_allowed ? forward_ready(j, 0) : kNever, StepKind::kForward, 0}};
    Choice next;
    for (const Choice& c : candidates) {
      if (c.start <= now) return {now, c.kind, c.chunk};
      if (c.start < next.start) next = c;
    }
    const bool blocked = (!f0_allowed && s.forwards[0] < micro_batches) || (!f1_allowed && s.forwards[1] < micro_batches);
    if (!s.weight_grads_due.empty() && (next.start == kNever || blocked || now + costs.weight_grad_s <= next.start)) {
      return {now, StepKind::kWeightGrad, s.weight_grads_due.front().first};
    }
    return next;
  }

  void run(int64_t j, const Choice& c, PipelineSchedule& out) {
    RankState& s = state[static_cast<size_t>(j)];
    const size_t chunk = static_cast<size_t>(c.chunk);
    int64_t mb = 0;
    double duration = 0.0;
    switch (c.kind) {
      case StepKind::kForward:
        mb = s.forwards[chunk]++;
        duration = costs.forward_s;
        s.pending += 1.0;
        forward_end[chunk][static_cast<size_t>(j)][static_cast<size_t>(mb)] = c.start + duration;
        break;
      case StepKind::kBackward:
        mb = s.input_grads[chunk]++;
        duration = costs.input_grad_s;
        s.pending -= 1.0 - costs.weight_retained;
        input_grad_end[chunk][static_cast<size_t>(j)][static_cast<size_t>(mb)] = c.start + duration;
        s.weight_grads_due.emplace_back(c.chunk, mb);
        break;
      case StepKind::kWeightGrad:
        mb = s.weight_grads_due.front().second;
        s.weight_grads_due.pop_front();
        duration = costs.weight_grad_s;
        s.pending -= costs.weight_retained;
        break;
    }
    s.free_at = c.start + duration;
    out.steps[static_cast<size_t>(j)].push_back({c.kind, mb, c.chunk});
  }
};

}  // namespace

PipelineSchedule make_zero_bubble_v_schedule(int64_t stages, int64_t micro_batches, const ZeroBubbleCosts& costs) {
  check_zero_bubble_inputs(Schedule::kZeroBubbleV, stages, micro_batches, costs);
  if (stages < 2) throw InputError("ZB-V schedule: needs stages >= 2 (stages is " + std::to_string(stages) + ")");
  VScheduler z{stages, micro_batches, costs, {}, {}, {}};
  z.state.assign(static_cast<size_t>(stages), {});
  for (auto* ends : {&z.forward_end, &z.input_grad_end}) {
    for (auto& chunk : *ends) chunk.assign(static_cast<size_t>(stages), std::vector<double>(static_cast<size_t>(micro_batches), kNever));
  }
  return list_schedule(z, Schedule::kZeroBubbleV, stages, 2, micro_batches, 6 * stages * micro_batches);
}

}  // namespace trainsim
