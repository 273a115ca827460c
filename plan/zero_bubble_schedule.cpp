// The greedy list scheduler of Zero Bubble pipelines; see zero_bubble_schedule.hpp.
//
// Every stage runs its passes in order of the time it could start them, earliest stage first, so a
// decision at time t knows every pass that ends by t. A stage that is free picks, in order:
//  1. B of its oldest forwarded micro-batch, when the next stage's B (or, last stage, its own F)
//     has arrived: B is on the critical path of every stage before it;
//  2. F of the next micro-batch, when it has arrived and its activations fit under the limit;
//  3. W of its oldest B, when nothing above has arrived and W ends before the next arrival (or the
//     arrival is not yet known, or the memory limit blocks F): W fills what 1F1B leaves idle.
// Otherwise it waits for the next arrival. At the end each stage runs its remaining W passes.
#include "plan/zero_bubble_schedule.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "plan/list_schedule.hpp"

namespace trainsim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct StageState {
  double free_at = 0.0;  // when the stage's compute is next free
  double pending = 0.0;  // activation memory held, in micro-batches
  int64_t forwards = 0, input_grads = 0, weight_grads = 0;
};

struct Choice {
  double start = kNever;
  StepKind kind = StepKind::kForward;
};

struct Scheduler {
  int64_t stages, micro_batches, memory_micro_batches;
  ZeroBubbleCosts costs;
  std::vector<StageState> state;
  std::vector<std::vector<double>> forward_end, input_grad_end;  // [stage][micro-batch]

  double limit() const { return static_cast<double>(memory_micro_batches * stages); }

  double input_grad_ready(int64_t j) const {
    const StageState& s = state[static_cast<size_t>(j)];
    if (s.input_grads >= s.forwards) return kNever;
    const size_t mb = static_cast<size_t>(s.input_grads);
    return j == stages - 1 ? forward_end[static_cast<size_t>(j)][mb] : input_grad_end[static_cast<size_t>(j + 1)][mb] + costs.p2p_s;
  }

  double forward_ready(int64_t j) const {
    const StageState& s = state[static_cast<size_t>(j)];
    if (s.forwards >= micro_batches) return kNever;
    return j == 0 ? 0.0 : forward_end[static_cast<size_t>(j - 1)][static_cast<size_t>(s.forwards)] + costs.p2p_s;
  }

  // Forwards stage j runs before its first B: as 1F1B (p - j) with k 1; with k 2, the forwards
  // that fit before the first B comes back, 2(p - j) - 1 (Zero Bubble's ZB-H2).
  int64_t warmup(int64_t j) const {
    const int64_t n = memory_micro_batches == 1 ? stages - j : 2 * (stages - j) - 1;
    return std::min(n, micro_batches);
  }

  // The next F or B in 1F1B's order (warm-up forwards, then B and F in turn, then the last Bs),
  // and when it can start; W passes go in front of it while it waits.
  Choice choose(int64_t j) const {
    const StageState& s = state[static_cast<size_t>(j)];
    const bool backward_next = s.forwards >= warmup(j) && (s.forwards == micro_batches || s.forwards - s.input_grads >= warmup(j));
    const StepKind kind = backward_next ? StepKind::kBackward : StepKind::kForward;
    const bool nothing_left = backward_next && s.input_grads == micro_batches;
    const double ready = nothing_left ? kNever : backward_next ? input_grad_ready(j) : forward_ready(j);
    const bool memory_bound = !backward_next && s.pending + 1.0 > limit() + 1e-9;
    const double now = s.free_at;
    if (!memory_bound && ready <= now) return {now, kind};
    const bool w_pending = s.weight_grads < s.input_grads;
    if (w_pending && (memory_bound || ready == kNever || now + costs.weight_grad_s <= ready)) return {now, StepKind::kWeightGrad};
    if (ready == kNever || memory_bound) return {kNever, kind};
    return {ready, kind};
  }

  void run(int64_t j, const Choice& c, PipelineSchedule& out) {
    StageState& s = state[static_cast<size_t>(j)];
    const size_t stage = static_cast<size_t>(j);
    int64_t micro_batch = 0;
    double duration = 0.0;
    switch (c.kind) {
      case StepKind::kForward:
        micro_batch = s.forwards++;
        duration = costs.forward_s;
        s.pending += 1.0;
        forward_end[stage][static_cast<size_t>(micro_batch)] = c.start + duration;
        break;
      case StepKind::kBackward:
        micro_batch = s.input_grads++;
        duration = costs.input_grad_s;
        s.pending -= 1.0 - costs.weight_retained;
        input_grad_end[stage][static_cast<size_t>(micro_batch)] = c.start + duration;
        break;
      case StepKind::kWeightGrad:
        micro_batch = s.weight_grads++;
        duration = costs.weight_grad_s;
        s.pending -= costs.weight_retained;
        break;
    }
    s.free_at = c.start + duration;
    out.steps[stage].push_back({c.kind, micro_batch, 0});
  }
};

}  // namespace

void check_zero_bubble_inputs(Schedule kind, int64_t stages, int64_t micro_batches, const ZeroBubbleCosts& c) {
  if (!is_zero_bubble(kind)) throw InputError(std::string("schedule ") + to_string(kind) + " is not a Zero Bubble schedule");
  if (stages < 1 || micro_batches < 1) {
    throw InputError("Zero Bubble schedule: stages (" + std::to_string(stages) + ") and micro_batches (" +
                     std::to_string(micro_batches) + ") must be >= 1");
  }
  if (!(c.forward_s > 0) || !(c.input_grad_s > 0) || !(c.weight_grad_s > 0) || !(c.p2p_s >= 0) ||
      !(c.weight_retained >= 0 && c.weight_retained <= 1)) {
    throw InputError("Zero Bubble schedule: pass times must be > 0, p2p >= 0 and the retained fraction in [0, 1]");
  }
}

PipelineSchedule make_zero_bubble_schedule(Schedule kind, int64_t stages, int64_t micro_batches, const ZeroBubbleCosts& costs) {
  check_zero_bubble_inputs(kind, stages, micro_batches, costs);
  if (kind == Schedule::kZeroBubbleV) return make_zero_bubble_v_schedule(stages, micro_batches, costs);
  Scheduler z{stages, micro_batches, kind == Schedule::kZeroBubble2p ? 2 : 1, costs, {}, {}, {}};
  z.state.assign(static_cast<size_t>(stages), {});
  z.forward_end.assign(static_cast<size_t>(stages), std::vector<double>(static_cast<size_t>(micro_batches), kNever));
  z.input_grad_end = z.forward_end;
  return list_schedule(z, kind, stages, 1, micro_batches, 3 * stages * micro_batches);
}

double zero_bubble_weight_retained(const ModelSpec& model, const ParallelPlan& plan) {
  const double h = static_cast<double>(model.hidden);
  const double scores = plan.attention == AttentionKernel::kUnfused
                            ? 5.0 * static_cast<double>(model.heads) * static_cast<double>(model.seq_len) : 0.0;
  return 32.0 * h / (34.0 * h + scores);
}

double peak_pending_micro_batches(const PipelineSchedule& schedule, int64_t stage, double weight_retained) {
  const double chunk = 1.0 / static_cast<double>(schedule.chunks);  // a chunk holds 1/chunks of the stage's layers
  double pending = 0.0, peak = 0.0;
  for (const PipelineStep& step : schedule.steps[static_cast<size_t>(stage)]) {
    if (step.kind == StepKind::kForward) pending += chunk;
    if (step.kind == StepKind::kBackward) pending -= chunk * (1.0 - weight_retained);
    if (step.kind == StepKind::kWeightGrad) pending -= chunk * weight_retained;
    peak = std::max(peak, pending);
  }
  return peak;
}

}  // namespace trainsim
