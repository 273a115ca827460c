// A deterministic discrete-event engine for one iteration's task graph. Each task runs on one
// stream (a GPU compute stream, a communication stream, a link) in the order it was added to
// that stream, and starts when its stream is free and all its dependencies have finished.
// Events are task completions, processed in time order with ties broken by insertion order
// (the order the tasks were added), so the same graph always gives the same timeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainsim {

using TaskId = int32_t;

struct Task {
  int32_t stream = 0;
  double duration_s = 0;
  int32_t category = 0;  // caller-defined (for breakdowns and traces)
  int32_t label = 0;     // caller-defined (e.g. micro-batch)
};

struct TaskTiming {
  double start_s = 0;
  double end_s = 0;
  TaskId waited_on = -1;  // the dependency that finished last, if the task waited for it; else -1
};

class TaskGraph {
 public:
  TaskId add(int32_t stream, double duration_s, int32_t category = 0, int32_t label = 0);
  // `task` may start only after `dep` has finished (any insertion order; the graph must stay acyclic).
  void add_dep(TaskId task, TaskId dep);
  const std::vector<Task>& tasks() const { return tasks_; }
  size_t dependency_count() const { return edges_.size(); }
  int32_t stream_count() const { return stream_count_; }
  void reserve(size_t tasks, size_t dependencies);

 private:
  friend std::vector<TaskTiming> simulate(const TaskGraph& graph);
  std::vector<Task> tasks_;
  std::vector<std::pair<TaskId, TaskId>> edges_;  // (dependency, task)
  int32_t stream_count_ = 0;
};

// Runs the graph; throws InternalError when some task can never start (a dependency cycle or
// a stream order that contradicts the dependencies).
std::vector<TaskTiming> simulate(const TaskGraph& graph);

}  // namespace trainsim
