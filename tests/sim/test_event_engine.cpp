// The event engine: stream order, dependencies, determinism and tie-breaking; the sweep against
// an event queue in time order (what it replaced) on random graphs.
#include <catch2/catch.hpp>

#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "sim/event_engine.hpp"

using namespace trainsim;

TEST_CASE("tasks on one stream run back to back in the order they were added") {
  TaskGraph g;
  g.add(0, 1.0);
  g.add(0, 2.0);
  g.add(0, 0.5);
  const auto t = simulate(g);
  CHECK(t[0].start_s == 0.0);
  CHECK(t[1].start_s == 1.0);
  CHECK(t[2].start_s == 3.0);
  CHECK(t[2].end_s == 3.5);
}

TEST_CASE("a task waits for its last dependency and for its stream") {
  TaskGraph g;
  const TaskId a = g.add(0, 1.0);
  const TaskId b = g.add(1, 3.0);
  const TaskId c = g.add(2, 1.0);
  g.add_dep(c, a);
  g.add_dep(c, b);
  const TaskId d = g.add(0, 1.0);  // stream 0 is free at 1.0
  const auto t = simulate(g);
  CHECK(t[static_cast<size_t>(c)].start_s == 3.0);
  CHECK(t[static_cast<size_t>(c)].waited_on == b);
  CHECK(t[static_cast<size_t>(d)].waited_on == -1);
  CHECK(t[static_cast<size_t>(d)].start_s == 1.0);
}

TEST_CASE("dependencies may point forward in insertion order") {
  TaskGraph g;
  const TaskId consumer = g.add(0, 1.0);
  const TaskId producer = g.add(1, 2.0);
  g.add_dep(consumer, producer);
  const auto t = simulate(g);
  CHECK(t[static_cast<size_t>(consumer)].start_s == 2.0);
}

TEST_CASE("equal completion times are processed in insertion order, so runs are identical") {
  TaskGraph g;
  for (int i = 0; i < 50; ++i) g.add(i % 5, 1.0);  // many simultaneous completions
  for (int i = 0; i < 10; ++i) {
    const TaskId t = g.add(5, 0.25);
    g.add_dep(t, static_cast<TaskId>(i));
    g.add_dep(t, static_cast<TaskId>(49 - i));
  }
  const auto first = simulate(g);
  const auto second = simulate(g);
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(first[i].start_s == second[i].start_s);
    CHECK(first[i].end_s == second[i].end_s);
  }
  CHECK(first[59].end_s == Approx(10.0 + 0.25 * 10).margin(1e-12));
}

TEST_CASE("a stream order that contradicts the dependencies is reported, not hung") {
  TaskGraph g;
  const TaskId first = g.add(0, 1.0);
  const TaskId second = g.add(0, 1.0);
  g.add_dep(first, second);  // stream 0 must run `first` before `second`, but `first` waits on it
  CHECK_THROWS_AS(simulate(g), InternalError);
}

TEST_CASE("the task that held a task back: the dependency that ended last, the later-added on ties, none when its stream did") {
  TaskGraph g;
  const TaskId a = g.add(0, 2.0), b = g.add(1, 2.0), c = g.add(2, 1.0);
  const TaskId tie = g.add(3, 1.0);  // a and b end together at 2: b, the later added
  g.add_dep(tie, a);
  g.add_dep(tie, b);
  const TaskId later = g.add(4, 1.0);  // c ends at 1, a at 2: a
  g.add_dep(later, c);
  g.add_dep(later, a);
  const TaskId busy = g.add(0, 1.0);  // its dependency c ended at 1, its stream (a) at 2: the stream
  g.add_dep(busy, c);
  const auto t = simulate(g);
  CHECK(t[static_cast<size_t>(tie)].waited_on == b);
  CHECK(t[static_cast<size_t>(later)].waited_on == a);
  CHECK(t[static_cast<size_t>(busy)].waited_on == -1);
  CHECK(t[static_cast<size_t>(busy)].start_s == 2.0);
}

namespace {
// The engine's contract as an event queue runs it: completions in time order, ties by insertion
// order; a stream's next task starts when the stream is free and its dependencies have ended.
std::vector<TaskTiming> reference_simulate(const TaskGraph& g, const std::vector<std::pair<TaskId, TaskId>>& edges) {
  const auto& tasks = g.tasks();
  const size_t n = tasks.size();
  std::vector<std::vector<TaskId>> after(n);
  std::vector<int> waiting(n, 0);
  for (const auto& [dep, task] : edges) {
    after[static_cast<size_t>(dep)].push_back(task);
    ++waiting[static_cast<size_t>(task)];
  }
  std::vector<std::vector<TaskId>> order(static_cast<size_t>(g.stream_count()));
  for (size_t i = 0; i < n; ++i) order[static_cast<size_t>(tasks[i].stream)].push_back(static_cast<TaskId>(i));
  std::vector<size_t> next(order.size(), 0);
  std::vector<double> free_at(order.size(), 0.0), ready(n, 0.0);
  std::vector<char> busy(order.size(), 0);
  std::vector<TaskTiming> t(n);
  std::priority_queue<std::pair<double, TaskId>, std::vector<std::pair<double, TaskId>>, std::greater<>> events;
  auto start = [&](size_t s) {
    if (busy[s] || next[s] >= order[s].size()) return;
    const size_t i = static_cast<size_t>(order[s][next[s]]);
    if (waiting[i] > 0) return;
    if (ready[i] <= free_at[s]) t[i].waited_on = -1;
    t[i].start_s = std::max(free_at[s], ready[i]);
    t[i].end_s = t[i].start_s + tasks[i].duration_s;
    busy[s] = 1;
    events.push({t[i].end_s, static_cast<TaskId>(i)});
  };
  for (size_t s = 0; s < order.size(); ++s) start(s);
  while (!events.empty()) {
    const auto [time, id] = events.top();
    events.pop();
    const size_t s = static_cast<size_t>(tasks[static_cast<size_t>(id)].stream);
    busy[s] = 0;
    free_at[s] = time;
    ++next[s];
    for (TaskId d : after[static_cast<size_t>(id)]) {
      if (time >= ready[static_cast<size_t>(d)]) {
        ready[static_cast<size_t>(d)] = time;
        t[static_cast<size_t>(d)].waited_on = id;
      }
      if (--waiting[static_cast<size_t>(d)] == 0) start(static_cast<size_t>(tasks[static_cast<size_t>(d)].stream));
    }
    start(s);
  }
  return t;
}
}  // namespace

TEST_CASE("the stream-by-stream sweep gives what a time-ordered event queue gives, ties and zero durations included") {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 200; ++trial) {
    TaskGraph g;
    std::vector<std::pair<TaskId, TaskId>> edges;
    const int streams = 1 + static_cast<int>(rng() % 6), n = 1 + static_cast<int>(rng() % 80);
    for (int i = 0; i < n; ++i) {
      // Durations of a few quarter steps (zero included), so completions often tie.
      const TaskId id = g.add(static_cast<int32_t>(rng() % static_cast<unsigned>(streams)), 0.25 * static_cast<double>(rng() % 4));
      for (int k = 0; k < 3 && id > 0; ++k) {  // dependencies on earlier tasks only: acyclic with the streams' order
        if (rng() % 2 == 0) continue;
        const TaskId dep = static_cast<TaskId>(rng() % static_cast<unsigned>(id));
        g.add_dep(id, dep);
        edges.emplace_back(dep, id);
      }
    }
    const auto sweep = simulate(g), reference = reference_simulate(g, edges);
    INFO("trial " << trial);
    for (size_t i = 0; i < sweep.size(); ++i) {
      CHECK(sweep[i].start_s == reference[i].start_s);
      CHECK(sweep[i].end_s == reference[i].end_s);
      CHECK(sweep[i].waited_on == reference[i].waited_on);
    }
  }
}
