// Trace writer: microsecond timestamps, process/thread names as metadata events; each rank
// class's events are built once and written once per rank it stands for.
#include "reports/perfetto_trace.hpp"

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "plan/rank_grid.hpp"

namespace trainsim {

namespace {

using Json = nlohmann::ordered_json;

enum Track : int { kCompute, kTpComm, kCpComm, kEpComm, kDpReduce, kDpGather, kSendNext, kSendPrev, kTracks };
const char* const kTrackNames[kTracks] = {"compute",   "TP comm (exposed)", "CP comm (exposed)",    "EP comm (exposed)",
                                          "DP reduce", "DP all-gather",     "PP send to next stage", "PP send to previous stage"};
// The simulator's streams per stage (sim/simulator.cpp): compute, send next, send previous, DP reduce, DP gather.
const Track kStreamTrack[] = {kCompute, kSendNext, kSendPrev, kDpReduce, kDpGather};
const char* const kCategoryNames[] = {"forward", "backward", "send activation", "send gradient", "dp reduce", "dp gather", "optimizer"};

struct ClassEvents {
  std::vector<Json> slices;  // pid left to the writer
  struct Flow {
    double ts_s;
    int64_t task;
    bool start;  // the send (start) or the step receiving it (finish)
    Track track;
  };
  std::vector<Flow> flows;
};

Json slice(const std::string& name, const char* category, Track track, double start_s, double duration_s, Json args) {
  Json e;
  e["name"] = name;
  e["cat"] = category;
  e["ph"] = "X";
  e["tid"] = static_cast<int>(track);
  e["ts"] = start_s * 1e6;
  e["dur"] = duration_s * 1e6;
  e["args"] = std::move(args);
  return e;
}

// A compute task's layers: the compute part on the compute track, the exposed collectives after
// it on their group's track (the simulator runs them inline, split by their times alone).
void draw_layers(const SimulationTrace& t, size_t i, ClassEvents& out) {
  const Task& task = t.graph.tasks()[i];
  const TaskDetail& d = t.details[i];
  const bool backward = task.category == static_cast<int32_t>(TaskCategory::kBackward);
  const LayerPassSummary& pass = backward ? t.backward : t.forward;
  const char* kind = backward ? "backward" : "forward";
  double comm_alone = 0;
  for (double s : pass.comm_s) comm_alone += s;
  static const Track kCommTrack[] = {kTpComm, kCpComm, kEpComm};
  static const char* const kCommNames[] = {"TP", "CP", "EP"};
  for (int32_t l = 0; l < d.layers; ++l) {
    const int32_t layer = backward ? d.first_layer - l : d.first_layer + l;
    const double start = t.timing[i].start_s + d.lead_s + d.layer_period_s * l;
    const double compute_s = d.layer.compute_s + d.layer.host_idle_s;
    const std::string suffix = " L" + std::to_string(layer) + " mb " + std::to_string(task.label);
    out.slices.push_back(slice(std::string(kind) + suffix, kind, kCompute, start, compute_s,
                               {{"op", std::string("layer ") + kind}, {"layer", layer}, {"micro_batch", task.label},
                                {"virtual_stage", d.virtual_stage}, {"flops", pass.flops}, {"host_idle_s", d.layer.host_idle_s}}));
    double cursor = start + compute_s;
    for (size_t g = 0; g < 3; ++g) {
      if (pass.comm_s[g] <= 0 || comm_alone <= 0) continue;
      const double exposed = d.layer.tp_s * pass.comm_s[g] / comm_alone;
      out.slices.push_back(slice(std::string(kCommNames[g]) + " " + kind + suffix, "comm", kCommTrack[g], cursor, exposed,
                                 {{"op", std::string(kCommNames[g]) + " collectives"}, {"layer", layer}, {"micro_batch", task.label},
                                  {"bytes", pass.comm_bytes[g]}, {"exposed_s", exposed}, {"alone_s", pass.comm_s[g]}}));
      cursor += exposed;
    }
  }
}

// A ZeRO-3 collective of several layers, each where the layer-by-layer schedule issues it.
void draw_dp_layers(const SimulationTrace& t, size_t i, ClassEvents& out) {
  const Task& task = t.graph.tasks()[i];
  const TaskDetail& d = t.details[i];
  const bool gather = task.category == static_cast<int32_t>(TaskCategory::kDpGather);
  const bool backward = t.graph.tasks()[static_cast<size_t>(d.peer)].category == static_cast<int32_t>(TaskCategory::kBackward);
  const double first_start = t.timing[static_cast<size_t>(d.peer)].start_s;
  const int32_t from = backward ? t.details[static_cast<size_t>(d.peer)].first_layer - d.first_layer
                                : d.first_layer - t.details[static_cast<size_t>(d.peer)].first_layer;  // position in the step
  double cursor = t.timing[i].start_s;
  for (int32_t l = 0; l < d.layers; ++l) {
    const int32_t at = from + l;  // the layer's position in its step
    // A gather is issued as the layer before starts; a reduce-scatter once its layer's backward ends.
    // (The step's first gather is issued as the step before starts its last layer: the task's own start.)
    const double issued = !gather ? first_start + d.layer_period_s * at + d.layer.total()
                          : at == 0 ? t.timing[i].start_s
                                    : first_start + d.layer_period_s * (at - 1);
    const double start = std::max(cursor, issued);
    const int32_t layer = backward ? d.first_layer - l : d.first_layer + l;
    const char* op = gather ? "all-gather" : "reduce-scatter";
    out.slices.push_back(slice(std::string(op) + " L" + std::to_string(layer) + " mb " + std::to_string(task.label), gather ? "dp gather" : "dp reduce",
                               gather ? kDpGather : kDpReduce, start, d.layer_s,
                               {{"op", std::string("ZeRO-3 ") + op}, {"layer", layer}, {"micro_batch", task.label}, {"bytes", d.bytes}}));
    cursor = start + d.layer_s;
  }
}

void draw_task(const SimulationTrace& t, size_t i, ClassEvents& out) {
  const Task& task = t.graph.tasks()[i];
  const TaskDetail& d = t.details[i];
  const auto category = static_cast<TaskCategory>(task.category);
  const bool compute = category == TaskCategory::kForward || category == TaskCategory::kBackward;
  if (compute && d.layers > 0) return draw_layers(t, i, out);
  if (task.duration_s <= 0) return;
  const bool dp = category == TaskCategory::kDpGather || category == TaskCategory::kDpReduce;
  if (dp && d.layers > 0 && d.peer >= 0) return draw_dp_layers(t, i, out);
  const char* name = kCategoryNames[task.category];
  const bool per_micro_batch = category <= TaskCategory::kSendBackward;
  Json args = {{"op", name}};
  if (per_micro_batch) args["micro_batch"] = task.label;
  if (d.bytes > 0) args["bytes"] = d.bytes;
  if (d.params > 0) args["params"] = d.params;
  const Track track = kStreamTrack[task.stream % t.streams_per_stage];
  out.slices.push_back(slice(per_micro_batch ? std::string(name) + " mb " + std::to_string(task.label) : std::string(name), name, track,
                             t.timing[i].start_s, task.duration_s, std::move(args)));
  if (category == TaskCategory::kSendForward || category == TaskCategory::kSendBackward) {
    out.flows.push_back({t.timing[i].start_s, static_cast<int64_t>(i), true, track});
  }
}

// Every class's events, and the flow finishes on the receiving stages.
std::vector<ClassEvents> draw_classes(const Prediction& p) {
  const SimulationTrace& t = p.trace;
  std::vector<ClassEvents> classes(static_cast<size_t>(p.plan.pp));
  for (size_t i = 0; i < t.graph.tasks().size(); ++i) {
    const size_t stage = static_cast<size_t>(t.graph.tasks()[i].stream / t.streams_per_stage);
    draw_task(t, i, classes[stage]);
    const TaskDetail& d = t.details[i];
    const auto category = static_cast<TaskCategory>(t.graph.tasks()[i].category);
    if ((category == TaskCategory::kSendForward || category == TaskCategory::kSendBackward) && d.peer >= 0) {
      classes[static_cast<size_t>(d.peer_stage)].flows.push_back({t.timing[static_cast<size_t>(d.peer)].start_s, static_cast<int64_t>(i), false, kCompute});
    }
  }
  return classes;
}

void write_metadata(std::ostream& out, int64_t pid, const std::string& name, bool& first) {
  auto emit = [&](const Json& e) {
    out << (first ? "" : ",\n") << e.dump();
    first = false;
  };
  emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
  emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
  for (int k = 0; k < kTracks; ++k) emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", k}, {"args", {{"name", kTrackNames[k]}}}});
}

// One rank (or rank class) `pid` drawing `events`; `lane` tells ranks of one class apart in flow ids.
void write_rank(std::ostream& out, const ClassEvents& events, int64_t pid, int64_t lane, int64_t lanes, bool& first) {
  for (const Json& s : events.slices) {
    Json e = s;
    e["pid"] = pid;
    out << (first ? "" : ",\n") << e.dump();
    first = false;
  }
  for (const ClassEvents::Flow& f : events.flows) {
    Json e = {{"name", "p2p"}, {"cat", "pp"}, {"ph", f.start ? "s" : "f"}, {"id", f.task * lanes + lane}, {"pid", pid},
              {"tid", static_cast<int>(f.track)}, {"ts", f.ts_s * 1e6}};
    if (!f.start) e["bp"] = "e";
    out << ",\n" << e.dump();
  }
}

}  // namespace

void write_perfetto_trace(std::ostream& out, const Prediction& p, const PerfettoOptions& options) {
  TRAINSIM_ASSERT(p.trace.details.size() == p.trace.graph.tasks().size(), "the trace needs the simulation's task details (keep_trace)");
  const std::vector<ClassEvents> classes = draw_classes(p);
  const ParallelPlan& plan = p.plan;
  const int64_t lanes = plan.tp * plan.cp * plan.dp;
  int64_t events = 0;
  for (const ClassEvents& c : classes) events += static_cast<int64_t>(c.slices.size() + c.flows.size());
  if (options.all_ranks && (plan.gpus() > kTraceRankLimit || events * lanes > kTraceEventLimit)) {
    throw InputError("--trace-ranks: all (" + std::to_string(plan.gpus()) + " ranks, " + std::to_string(events * lanes) +
                         " trace events) must stay within " + std::to_string(kTraceRankLimit) + " ranks and " +
                         std::to_string(kTraceEventLimit) + " events",
                     "use --trace-ranks classes (one track set per pipeline stage: its ranks run the same timeline)");
  }
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    const ClassEvents& c = classes[static_cast<size_t>(stage)];
    if (!options.all_ranks) {
      write_metadata(out, stage, "stage " + std::to_string(stage) + " (stands for its " + std::to_string(lanes) + " tp x cp x dp ranks)", first);
      write_rank(out, c, stage, 0, 1, first);
      continue;
    }
    for (int64_t dp = 0; dp < plan.dp; ++dp) {
      for (int64_t cp = 0; cp < plan.cp; ++cp) {
        for (int64_t tp = 0; tp < plan.tp; ++tp) {
          const int64_t rank = global_rank(plan, tp, cp, dp, stage);
          const int64_t lane = (dp * plan.cp + cp) * plan.tp + tp;
          write_metadata(out, rank, "rank " + std::to_string(rank) + " (pp " + std::to_string(stage) + ", dp " + std::to_string(dp) +
                                        ", cp " + std::to_string(cp) + ", tp " + std::to_string(tp) + ")", first);
          write_rank(out, c, rank, lane, lanes, first);
        }
      }
    }
  }
  out << "\n]}\n";
}

}  // namespace trainsim
