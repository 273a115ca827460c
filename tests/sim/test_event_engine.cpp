// The event engine: stream order, dependencies, determinism and tie-breaking.
#include <catch2/catch.hpp>

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
