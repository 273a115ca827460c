// Trace writer: microsecond timestamps, process/thread names as metadata events.
#include "reports/perfetto_trace.hpp"

#include <ostream>

#include <nlohmann/json.hpp>

namespace trainsim {

namespace {
const char* const kStreamNames[] = {"compute (+TP comm)", "PP send to next", "PP send to previous", "DP reduce",
                                    "DP gather"};
const char* const kCategoryNames[] = {"forward", "backward", "send activation", "send gradient", "dp reduce",
                                      "dp gather", "optimizer"};
}  // namespace

void write_perfetto_trace(std::ostream& out, const Prediction& p) {
  const SimulationTrace& trace = p.trace;
  const int64_t per_stage = trace.streams_per_stage;
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (int64_t stage = 0; stage < p.plan.pp; ++stage) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", stage}, {"tid", 0},
                      {"args", {{"name", "stage " + std::to_string(stage) + " (tp 0, dp 0)"}}}});
    for (int64_t s = 0; s < per_stage; ++s) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", stage}, {"tid", s},
                        {"args", {{"name", kStreamNames[s]}}}});
    }
  }
  const auto& tasks = trace.graph.tasks();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].duration_s <= 0) continue;
    const int64_t stage = tasks[i].stream / per_stage;
    const char* category = kCategoryNames[tasks[i].category];
    const bool per_micro_batch = tasks[i].category <= 3;
    nlohmann::ordered_json e;
    e["name"] = per_micro_batch ? std::string(category) + " mb " + std::to_string(tasks[i].label) : std::string(category);
    e["cat"] = category;
    e["ph"] = "X";
    e["pid"] = stage;
    e["tid"] = tasks[i].stream % per_stage;
    e["ts"] = trace.timing[i].start_s * 1e6;
    e["dur"] = tasks[i].duration_s * 1e6;
    events.push_back(e);
  }
  nlohmann::ordered_json doc;
  doc["displayTimeUnit"] = "ms";
  doc["traceEvents"] = events;
  out << doc.dump() << "\n";
}

}  // namespace trainsim
