// Event loop: a min-heap of (finish time, task id) completions; task ids are insertion order, so
// equal times resolve first-added first.
#include "sim/event_engine.hpp"

#include <algorithm>
#include <queue>

#include "common/errors.hpp"

namespace trainsim {

TaskId TaskGraph::add(int32_t stream, double duration_s, std::vector<TaskId> deps, int32_t category, int32_t label) {
  TRAINSIM_ASSERT(stream >= 0 && duration_s >= 0, "tasks need a stream and a non-negative duration");
  const TaskId id = static_cast<TaskId>(tasks_.size());
  tasks_.push_back(Task{stream, duration_s, std::move(deps), category, label});
  stream_count_ = std::max(stream_count_, stream + 1);
  return id;
}

void TaskGraph::add_dep(TaskId task, TaskId dep) {
  TRAINSIM_ASSERT(task >= 0 && dep >= 0 && static_cast<size_t>(task) < tasks_.size() &&
                      static_cast<size_t>(dep) < tasks_.size() && task != dep,
                  "dependencies join two different existing tasks");
  tasks_[static_cast<size_t>(task)].deps.push_back(dep);
}

std::vector<TaskTiming> simulate(const TaskGraph& graph) {
  const auto& tasks = graph.tasks();
  const size_t n = tasks.size();
  std::vector<TaskTiming> timing(n);
  std::vector<int32_t> waiting(n);           // unfinished dependencies
  std::vector<double> ready_at(n, 0.0);      // latest dependency finish
  std::vector<std::vector<TaskId>> dependents(n);
  std::vector<std::vector<TaskId>> stream_order(static_cast<size_t>(graph.stream_count()));
  for (size_t i = 0; i < n; ++i) {
    for (TaskId d : tasks[i].deps) TRAINSIM_ASSERT(d >= 0 && static_cast<size_t>(d) < n, "dependency on a missing task");
    waiting[i] = static_cast<int32_t>(tasks[i].deps.size());
    for (TaskId d : tasks[i].deps) dependents[static_cast<size_t>(d)].push_back(static_cast<TaskId>(i));
    stream_order[static_cast<size_t>(tasks[i].stream)].push_back(static_cast<TaskId>(i));
  }
  std::vector<size_t> next(stream_order.size(), 0);   // index of the stream's next task
  std::vector<bool> busy(stream_order.size(), false);
  std::vector<double> free_at(stream_order.size(), 0.0);

  using Event = std::pair<double, TaskId>;  // completion time, task
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  size_t finished = 0;

  auto try_start = [&](size_t stream) {
    if (busy[stream] || next[stream] >= stream_order[stream].size()) return;
    const TaskId id = stream_order[stream][next[stream]];
    if (waiting[static_cast<size_t>(id)] > 0) return;
    TaskTiming& t = timing[static_cast<size_t>(id)];
    t.start_s = std::max(free_at[stream], ready_at[static_cast<size_t>(id)]);
    t.end_s = t.start_s + tasks[static_cast<size_t>(id)].duration_s;
    busy[stream] = true;
    events.push({t.end_s, id});
  };
  for (size_t s = 0; s < stream_order.size(); ++s) try_start(s);
  while (!events.empty()) {
    const auto [time, id] = events.top();
    events.pop();
    ++finished;
    const size_t stream = static_cast<size_t>(tasks[static_cast<size_t>(id)].stream);
    busy[stream] = false;
    free_at[stream] = time;
    ++next[stream];
    for (TaskId d : dependents[static_cast<size_t>(id)]) {
      --waiting[static_cast<size_t>(d)];
      ready_at[static_cast<size_t>(d)] = std::max(ready_at[static_cast<size_t>(d)], time);
      if (waiting[static_cast<size_t>(d)] == 0) try_start(static_cast<size_t>(tasks[static_cast<size_t>(d)].stream));
    }
    try_start(stream);
  }
  TRAINSIM_ASSERT(finished == n, "the task graph deadlocks: " + std::to_string(n - finished) + " tasks never started");
  return timing;
}

}  // namespace trainsim
