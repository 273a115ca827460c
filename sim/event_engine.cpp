// Event loop: a min-heap of (finish time, task id) completions; task ids are insertion order, so
// equal times resolve first-added first. Dependencies are kept as an edge list and turned into
// compressed rows once per run (no allocation per task).
#include "sim/event_engine.hpp"

#include <algorithm>
#include <queue>
#include <string>

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

std::vector<TaskTiming> simulate(const TaskGraph& graph) {
  const auto& tasks = graph.tasks_;
  const size_t n = tasks.size();
  std::vector<TaskTiming> timing(n);
  std::vector<int32_t> waiting(n, 0);  // unfinished dependencies
  std::vector<double> ready_at(n, 0.0);
  // Dependents of each task in compressed rows.
  std::vector<int32_t> row(n + 1, 0);
  for (const auto& [dep, task] : graph.edges_) {
    ++row[static_cast<size_t>(dep) + 1];
    ++waiting[static_cast<size_t>(task)];
  }
  for (size_t i = 0; i < n; ++i) row[i + 1] += row[i];
  std::vector<TaskId> dependents(graph.edges_.size());
  {
    std::vector<int32_t> fill(row.begin(), row.end() - 1);
    for (const auto& [dep, task] : graph.edges_) dependents[static_cast<size_t>(fill[static_cast<size_t>(dep)]++)] = task;
  }
  // Each stream's tasks in insertion order.
  const size_t streams = static_cast<size_t>(graph.stream_count_);
  std::vector<int32_t> stream_row(streams + 1, 0);
  for (const Task& t : tasks) ++stream_row[static_cast<size_t>(t.stream) + 1];
  for (size_t s = 0; s < streams; ++s) stream_row[s + 1] += stream_row[s];
  std::vector<TaskId> stream_tasks(n);
  {
    std::vector<int32_t> fill(stream_row.begin(), stream_row.end() - 1);
    for (size_t i = 0; i < n; ++i) stream_tasks[static_cast<size_t>(fill[static_cast<size_t>(tasks[i].stream)]++)] = static_cast<TaskId>(i);
  }
  std::vector<int32_t> next(stream_row.begin(), stream_row.end() - 1);  // position of each stream's next task
  std::vector<char> busy(streams, 0);
  std::vector<double> free_at(streams, 0.0);

  using Event = std::pair<double, TaskId>;  // completion time, task
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  size_t finished = 0;

  auto try_start = [&](size_t stream) {
    if (busy[stream] || next[stream] >= stream_row[stream + 1]) return;
    const TaskId id = stream_tasks[static_cast<size_t>(next[stream])];
    const size_t i = static_cast<size_t>(id);
    if (waiting[i] > 0) return;
    TaskTiming& t = timing[i];
    if (ready_at[i] <= free_at[stream]) t.waited_on = -1;
    t.start_s = std::max(free_at[stream], ready_at[i]);
    t.end_s = t.start_s + tasks[i].duration_s;
    busy[stream] = 1;
    events.push({t.end_s, id});
  };
  for (size_t s = 0; s < streams; ++s) try_start(s);
  while (!events.empty()) {
    const auto [time, id] = events.top();
    events.pop();
    ++finished;
    const size_t stream = static_cast<size_t>(tasks[static_cast<size_t>(id)].stream);
    busy[stream] = 0;
    free_at[stream] = time;
    ++next[stream];
    for (int32_t k = row[static_cast<size_t>(id)]; k < row[static_cast<size_t>(id) + 1]; ++k) {
      const size_t d = static_cast<size_t>(dependents[static_cast<size_t>(k)]);
      if (time >= ready_at[d]) {
        ready_at[d] = time;
        timing[d].waited_on = id;
      }
      if (--waiting[d] == 0) try_start(static_cast<size_t>(tasks[d].stream));
    }
    try_start(stream);
  }
  TRAINSIM_ASSERT(finished == n, "the task graph deadlocks: " + std::to_string(n - finished) + " tasks never started");
  return timing;
}

}  // namespace trainsim
