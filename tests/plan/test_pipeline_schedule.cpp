// Pipeline schedules: hand-written orders for small cases, invariants over sweeps of p, m and v
// (every step once, backward after forward, micro-batches in flight), and a unit-time,
// dependency-respecting simulation written here that shows no schedule deadlocks and that the
// bubbles are those of Narayanan et al. 2021 §2.2: (p - 1) / (m + p - 1) for 1F1B, 1/v of that
// for interleaved 1F1B.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "plan/pipeline_schedule.hpp"

using namespace trainsim;

namespace {

struct Config {
  Schedule kind;
  int64_t p, v, m;
};

// 1F1B and GPipe: p in 1..8, m in 1..16. Interleaved: p in 2..8, v in 2..4, m = p, 2p, .. <= 32.
std::vector<Config> sweep(Schedule kind) {
  std::vector<Config> configs;
  if (kind != Schedule::kInterleaved) {
    for (int64_t p = 1; p <= 8; ++p)
      for (int64_t m = 1; m <= 16; ++m) configs.push_back({kind, p, 1, m});
    return configs;
  }
  for (int64_t p = 2; p <= 8; ++p)
    for (int64_t v = 2; v <= 4; ++v)
      for (int64_t m = p; m <= 32; m += p) configs.push_back({kind, p, v, m});
  return configs;
}

PipelineSchedule make(const Config& c) { return make_pipeline_schedule(c.kind, c.p, c.v, c.m); }

// Index of a (micro-batch, chunk) pair in per-stage tables.
size_t slot(const PipelineSchedule& s, const PipelineStep& step) {
  return static_cast<size_t>(step.micro_batch * s.chunks + step.chunk);
}

// The bound the brief derives from each schedule's warm-up. Megatron-LM runs every forward as
// warm-up when m == p under interleaving, so then the stage holds all m * v chunks.
int64_t in_flight_bound(const PipelineSchedule& s, int64_t stage) {
  const int64_t p = s.stages, v = s.chunks, m = s.micro_batches;
  switch (s.kind) {
    case Schedule::kGpipe: return m;
    case Schedule::k1F1B: return std::min(p - stage, m);
    case Schedule::kInterleaved:
      if (m == p) return m * v;
      return std::min((p - stage - 1) * 2 + (v - 1) * p + 1, m * v);
  }
  return 0;
}

// Per stage: the problems with its step list (empty when every invariant holds).
std::string stage_problems(const PipelineSchedule& s, int64_t stage) {
  const auto& steps = s.steps[static_cast<size_t>(stage)];
  const size_t slots = static_cast<size_t>(s.micro_batches * s.chunks);
  std::vector<int> forwards(slots, 0), backwards(slots, 0);
  std::string problems;
  for (const PipelineStep& step : steps) {
    if (step.micro_batch < 0 || step.micro_batch >= s.micro_batches || step.chunk < 0 || step.chunk >= s.chunks) {
      return "step out of range";
    }
    const size_t i = slot(s, step);
    if (step.kind == StepKind::kForward) {
      ++forwards[i];
    } else {
      if (forwards[i] == 0) problems += "backward before forward of mb " + std::to_string(step.micro_batch) + "; ";
      ++backwards[i];
    }
  }
  for (size_t i = 0; i < slots; ++i) {
    if (forwards[i] != 1 || backwards[i] != 1) problems += "slot " + std::to_string(i) + " not run exactly once; ";
  }
  if (steps.size() != 2 * slots) problems += "wrong step count; ";
  return problems;
}

// Unit-time simulation: each stage runs its list in order; a step starts when its stage is free
// and its dependencies are done. Forward of virtual stage vs needs forward of vs - 1 (same
// micro-batch); backward of vs needs backward of vs + 1 and its own forward. Returns the
// makespan, or -1 on deadlock.
int64_t simulate(const PipelineSchedule& s, int64_t forward_time, int64_t backward_time) {
  const int64_t virtual_stages = s.stages * s.chunks;
  // finish[kind][vs * m + mb]; -1 while not done.
  const size_t cells = static_cast<size_t>(virtual_stages * s.micro_batches);
  std::vector<std::vector<int64_t>> finish(2, std::vector<int64_t>(cells, -1));
  auto done = [&](int kind, int64_t vs, int64_t mb) {
    return finish[kind][static_cast<size_t>(vs * s.micro_batches + mb)];
  };
  std::vector<size_t> next(static_cast<size_t>(s.stages), 0);
  std::vector<int64_t> free_at(static_cast<size_t>(s.stages), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t stage = 0; stage < s.stages; ++stage) {
      const auto& steps = s.steps[static_cast<size_t>(stage)];
      size_t& n = next[static_cast<size_t>(stage)];
      while (n < steps.size()) {
        const PipelineStep& step = steps[n];
        const int64_t vs = s.virtual_stage(stage, step.chunk), mb = step.micro_batch;
        const bool forward = step.kind == StepKind::kForward;
        std::vector<int64_t> deps;
        if (forward && vs > 0) deps.push_back(done(0, vs - 1, mb));
        if (!forward && vs + 1 < virtual_stages) deps.push_back(done(1, vs + 1, mb));
        if (!forward) deps.push_back(done(0, vs, mb));
        if (std::any_of(deps.begin(), deps.end(), [](int64_t t) { return t < 0; })) break;
        int64_t start = free_at[static_cast<size_t>(stage)];
        for (int64_t t : deps) start = std::max(start, t);
        const int64_t end = start + (forward ? forward_time : backward_time);
        finish[forward ? 0 : 1][static_cast<size_t>(vs * s.micro_batches + mb)] = end;
        free_at[static_cast<size_t>(stage)] = end;
        ++n;
        progress = true;
      }
    }
  }
  for (int64_t stage = 0; stage < s.stages; ++stage) {
    if (next[static_cast<size_t>(stage)] < s.steps[static_cast<size_t>(stage)].size()) return -1;
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

std::string render(const std::vector<PipelineStep>& steps) {
  std::string text;
  for (const PipelineStep& step : steps) {
    text += step.kind == StepKind::kForward ? 'F' : 'B';
    text += std::to_string(step.micro_batch);
    if (step.chunk > 0) text.append(".").append(std::to_string(step.chunk));
    text += ' ';
  }
  return text;
}

std::string thrown_message(Schedule kind, int64_t p, int64_t v, int64_t m) {
  try {
    make_pipeline_schedule(kind, p, v, m);
  } catch (const InputError& e) {
    std::string all;
    for (const auto& problem : e.problems()) all += problem + "\n";
    return all;
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("1F1B for 4 stages and 6 micro-batches runs the PipeDream-Flush order on stages 0 and 3") {
  const PipelineSchedule s = make_pipeline_schedule(Schedule::k1F1B, 4, 1, 6);
  REQUIRE(s.steps.size() == 4);
  CHECK(render(s.steps[0]) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  CHECK(render(s.steps[3]) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
}

TEST_CASE("interleaved 1F1B for 2 stages, 2 chunks and 4 micro-batches follows Megatron-LM's chunk order") {
  const PipelineSchedule s = make_pipeline_schedule(Schedule::kInterleaved, 2, 2, 4);
  // Stage 0 warms up with (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards, stage 1 with 2.
  CHECK(render(s.steps[0]) == "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3 ");
  CHECK(render(s.steps[1]) == "F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3 ");
}

TEST_CASE("GPipe runs every forward, then every backward, in micro-batch order") {
  const PipelineSchedule s = make_pipeline_schedule(Schedule::kGpipe, 3, 1, 4);
  for (const auto& steps : s.steps) CHECK(render(steps) == "F0 F1 F2 F3 B0 B1 B2 B3 ");
}

TEST_CASE("interleaved 1F1B with m == p runs every forward as warm-up, as Megatron-LM does") {
  const PipelineSchedule s = make_pipeline_schedule(Schedule::kInterleaved, 4, 2, 4);
  for (int64_t stage = 0; stage < 4; ++stage) {
    const auto& steps = s.steps[static_cast<size_t>(stage)];
    const auto is_forward = [](const PipelineStep& x) { return x.kind == StepKind::kForward; };
    CHECK(std::all_of(steps.begin(), steps.begin() + 8, is_forward));
    CHECK(max_in_flight(s, stage) == 8);
  }
}

TEST_CASE("in flight per chunk: each chunk's own count, together at least the stage's") {
  const PipelineSchedule s = make_pipeline_schedule(Schedule::kInterleaved, 4, 2, 4);
  for (int64_t stage = 0; stage < 4; ++stage) {
    CHECK(max_in_flight(s, stage, 0) == 4);  // m == p: every forward is warm-up
    CHECK(max_in_flight(s, stage, 1) == 4);
  }
  for (const Config& c : sweep(Schedule::kInterleaved)) {
    const PipelineSchedule t = make(c);
    for (int64_t stage = 0; stage < c.p; ++stage) {
      int64_t sum = 0;
      for (int64_t chunk = 0; chunk < c.v; ++chunk) {
        CHECK(max_in_flight(t, stage, chunk) <= c.m);
        sum += max_in_flight(t, stage, chunk);
      }
      CHECK(sum >= max_in_flight(t, stage));
    }
  }
}

TEST_CASE("every stage walks the forwards, and the backwards, in the same (micro-batch, chunk) order") {
  // What the CUDA runtime's pipeline messages rely on: one communicator per direction matches the
  // sends of one stage with the receives of the next in order, round the ring too.
  for (Schedule kind : {Schedule::kGpipe, Schedule::k1F1B, Schedule::kInterleaved}) {
    for (const Config& c : sweep(kind)) {
      const PipelineSchedule s = make(c);
      const auto order = [&](int64_t stage, StepKind kind_of) {
        std::vector<std::pair<int64_t, int64_t>> out;
        for (const PipelineStep& step : s.steps[static_cast<size_t>(stage)]) {
          if (step.kind == kind_of) out.emplace_back(step.micro_batch, step.chunk);
        }
        return out;
      };
      for (int64_t stage = 1; stage < c.p; ++stage) {
        INFO(to_string(kind) << " p " << c.p << " v " << c.v << " m " << c.m << " stage " << stage);
        CHECK(order(stage, StepKind::kForward) == order(0, StepKind::kForward));
        CHECK(order(stage, StepKind::kBackward) == order(0, StepKind::kBackward));
      }
    }
  }
}

TEST_CASE("every schedule runs each (micro-batch, chunk) forward and backward exactly once, backward after forward") {
  for (Schedule kind : {Schedule::kGpipe, Schedule::k1F1B, Schedule::kInterleaved}) {
    for (const Config& c : sweep(kind)) {
      const PipelineSchedule s = make(c);
      REQUIRE(static_cast<int64_t>(s.steps.size()) == c.p);
      for (int64_t stage = 0; stage < c.p; ++stage) {
        INFO(to_string(kind) << " p " << c.p << " v " << c.v << " m " << c.m << " stage " << stage);
        CHECK(stage_problems(s, stage).empty());
      }
    }
  }
}

TEST_CASE("micro-batches in flight never exceed the schedule's bound, and reach it") {
  for (Schedule kind : {Schedule::kGpipe, Schedule::k1F1B, Schedule::kInterleaved}) {
    for (const Config& c : sweep(kind)) {
      const PipelineSchedule s = make(c);
      for (int64_t stage = 0; stage < c.p; ++stage) {
        INFO(to_string(kind) << " p " << c.p << " v " << c.v << " m " << c.m << " stage " << stage);
        CHECK(max_in_flight(s, stage) == in_flight_bound(s, stage));
      }
    }
  }
}

TEST_CASE("no schedule deadlocks, and 1F1B and GPipe take (m + p - 1) x (forward + backward)") {
  for (Schedule kind : {Schedule::kGpipe, Schedule::k1F1B}) {
    for (const Config& c : sweep(kind)) {
      INFO(to_string(kind) << " p " << c.p << " m " << c.m);
      // Bubble fraction (makespan - 3m) / makespan = (p - 1) / (m + p - 1).
      CHECK(simulate(make(c), 1, 2) == (c.m + c.p - 1) * 3);
    }
  }
}

TEST_CASE("interleaved 1F1B shrinks the bubble by the number of chunks v") {
  for (const Config& c : sweep(Schedule::kInterleaved)) {
    INFO("p " << c.p << " v " << c.v << " m " << c.m);
    // Chunk times 1/v and 2/v, counted in units of 1/v: makespan = 3 m v + 3 (p - 1), i.e. the
    // bubble is (p - 1) x 3 / v in whole-stage time.
    CHECK(simulate(make(c), 1, 2) == 3 * c.m * c.v + 3 * (c.p - 1));
  }
}

TEST_CASE("impossible schedules are input errors that name the values and the constraint") {
  CHECK_THAT(thrown_message(Schedule::kInterleaved, 4, 2, 6),
             Catch::Contains("micro_batches m (6) to be a multiple of pipeline stages p (4)"));
  CHECK_THAT(thrown_message(Schedule::kInterleaved, 1, 2, 4), Catch::Contains("needs pipeline stages p > 1 (p is 1)"));
  CHECK_THAT(thrown_message(Schedule::kInterleaved, 4, 1, 4), Catch::Contains("needs chunks v > 1 (v is 1)"));
  CHECK_THAT(thrown_message(Schedule::k1F1B, 4, 2, 8), Catch::Contains("chunks (2) must be 1"));
  CHECK_THAT(thrown_message(Schedule::kGpipe, 4, 3, 8), Catch::Contains("chunks (3) must be 1"));
  const std::string all = thrown_message(Schedule::k1F1B, 0, 0, 0);
  CHECK_THAT(all, Catch::Contains("pipeline stages (0) must be >= 1"));
  CHECK_THAT(all, Catch::Contains("micro_batches (0) must be >= 1"));
  CHECK_THAT(all, Catch::Contains("chunks (0) must be >= 1"));
}
