// Runs the graph as a longest-path sweep: a task starts at the later of its stream's previous
// task's end and its last dependency's end, so its times depend only on those tasks and not on
// the order they are computed in. Streams are drained one at a time, each as far as its next
// task's dependencies allow, from a stack of streams whose next task has become ready: each
// task is touched once, a stream's tasks in a row (they were mostly added in a row, so memory is
// read in order), and there is no priority queue. `waited_on` is the dependency that ended last,
// the highest id among equal ends (what an event queue in time order, ties by id, reports).
#include "sim/event_engine.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "common/errors.hpp"

namespace trainsim {

TaskId TaskGraph::add(int32_t stream, double duration_s, int32_t category, int32_t label) {
  TRAINSIM_ASSERT(stream >= 0 && duration_s >= 0, "tasks need a stream and a non-negative duration");
  const TaskId id = static_cast<TaskId>(tasks_.size());
  tasks_.push_back(Task{stream, duration_s, category, label});
  stream_count_ = std::max(stream_count_, stream + 1);
  return id;
}

void TaskGraph::add_dep(TaskId task, TaskId dep) {
  TRAINSIM_ASSERT(task >= 0 && dep >= 0 && static_cast<size_t>(task) < tasks_.size() &&
                      static_cast<size_t>(dep) < tasks_.size() && task != dep,
                  "dependencies join two different existing tasks");
  edges_.emplace_back(dep, task);
}

void TaskGraph::reserve(size_t tasks, size_t dependencies) {
  tasks_.reserve(tasks);
  edges_.reserve(dependencies);
}

namespace {

// What the sweep reads and writes per task, in one cache line's share.
struct Node {
  double ready_s = 0;       // the latest end of its finished dependencies
  double duration_s = 0;
  int32_t waiting = 0;      // unfinished dependencies
  int32_t stream = 0;
  int32_t dependents = 0;   // first of its dependents in the compressed rows
  TaskId waited_on = -1;    // the dependency that ended last (highest id on ties)
};

// The graph as the sweep reads it: per task its Node (dependents in compressed rows: task i's
// are dependents[node[i].dependents .. node[i + 1].dependents)), and each stream's tasks in
// insertion order (stream s's are stream_tasks[stream_row[s] .. stream_row[s + 1])).
struct SweepGraph {
  std::vector<Node> node;
  std::vector<TaskId> dependents;
  std::vector<int32_t> stream_row;
  std::vector<TaskId> stream_tasks;
};

SweepGraph index_graph(const std::vector<Task>& tasks, const std::vector<std::pair<TaskId, TaskId>>& edges, size_t streams) {
  const size_t n = tasks.size();
  SweepGraph g;
  g.node.resize(n + 1);
  for (size_t i = 0; i < n; ++i) {
    g.node[i].duration_s = tasks[i].duration_s;
    g.node[i].stream = tasks[i].stream;
  }
  for (const auto& [dep, task] : edges) {
    ++g.node[static_cast<size_t>(dep) + 1].dependents;
    ++g.node[static_cast<size_t>(task)].waiting;
  }
  for (size_t i = 0; i < n; ++i) g.node[i + 1].dependents += g.node[i].dependents;
  g.dependents.resize(edges.size());
  std::vector<int32_t> fill(n);
  for (size_t i = 0; i < n; ++i) fill[i] = g.node[i].dependents;
  for (const auto& [dep, task] : edges) g.dependents[static_cast<size_t>(fill[static_cast<size_t>(dep)]++)] = task;
  g.stream_row.assign(streams + 1, 0);
  for (const Task& t : tasks) ++g.stream_row[static_cast<size_t>(t.stream) + 1];
  for (size_t s = 0; s < streams; ++s) g.stream_row[s + 1] += g.stream_row[s];
  g.stream_tasks.resize(n);
  fill.assign(g.stream_row.begin(), g.stream_row.end() - 1);
  for (size_t i = 0; i < n; ++i) g.stream_tasks[static_cast<size_t>(fill[static_cast<size_t>(tasks[i].stream)]++)] = static_cast<TaskId>(i);
  return g;
}

}  // namespace

std::vector<TaskTiming> simulate(const TaskGraph& graph) {
  const size_t n = graph.tasks_.size(), streams = static_cast<size_t>(graph.stream_count_);
  SweepGraph g = index_graph(graph.tasks_, graph.edges_, streams);
  std::vector<Node>& node = g.node;
  const std::vector<TaskId>& dependents = g.dependents;
  const std::vector<int32_t>& stream_row = g.stream_row;
  const std::vector<TaskId>& stream_tasks = g.stream_tasks;
  std::vector<int32_t> next(stream_row.begin(), stream_row.end() - 1);  // position of each stream's next task
  std::vector<double> free_at(streams, 0.0);
  std::vector<TaskTiming> timing(n);

  auto head = [&](size_t s) { return next[s] < stream_row[s + 1] ? stream_tasks[static_cast<size_t>(next[s])] : TaskId{-1}; };
  std::vector<int32_t> runnable;  // streams whose next task has no unfinished dependency
  runnable.reserve(streams);
  for (size_t s = 0; s < streams; ++s) {
    const TaskId h = head(s);
    if (h >= 0 && node[static_cast<size_t>(h)].waiting == 0) runnable.push_back(static_cast<int32_t>(s));
  }
  size_t finished = 0;
  while (!runnable.empty()) {
    const size_t s = static_cast<size_t>(runnable.back());
    runnable.pop_back();
    for (TaskId id = head(s); id >= 0 && node[static_cast<size_t>(id)].waiting == 0; id = head(s)) {
      const size_t i = static_cast<size_t>(id);
      Node& task = node[i];
      TaskTiming& t = timing[i];
      t.waited_on = task.ready_s <= free_at[s] ? -1 : task.waited_on;
      t.start_s = std::max(free_at[s], task.ready_s);
      t.end_s = t.start_s + task.duration_s;
      free_at[s] = t.end_s;
      ++next[s];
      ++finished;
      for (int32_t k = task.dependents; k < node[i + 1].dependents; ++k) {
        const TaskId d = dependents[static_cast<size_t>(k)];
        Node& after = node[static_cast<size_t>(d)];
        if (t.end_s > after.ready_s || (t.end_s == after.ready_s && id > after.waited_on)) {
          after.ready_s = t.end_s;
          after.waited_on = id;
        }
        const size_t ds = static_cast<size_t>(after.stream);
        if (--after.waiting == 0 && ds != s && head(ds) == d) runnable.push_back(static_cast<int32_t>(ds));
      }
    }
  }
  TRAINSIM_ASSERT(finished == n, "the task graph deadlocks: " + std::to_string(n - finished) + " tasks never started");
  return timing;
}

}  // namespace trainsim
