// The Perfetto trace, parsed back: communication on tracks of its own, per-layer slices carrying
// FLOPs and bytes, pipeline sends joined to their receivers by flows, ZeRO-3 gathers no more than
// one layer ahead of the layer that uses them, and --trace-ranks all within its limit.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "model/model_catalog.hpp"
#include "reports/perfetto_trace.hpp"
#include "sim/cost_model.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {

Hardware h100s(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = gpus;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  return hw;
}

nlohmann::json trace_of(const ModelSpec& m, const ParallelPlan& p, const PerfettoOptions& o = {}) {
  const Hardware hw = h100s(p.gpus());
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  SimulationOptions keep;
  keep.keep_trace = true;
  const Prediction r = predict_iteration(m, p, hw, cost, keep);
  std::ostringstream out;
  write_perfetto_trace(out, r, o);
  return nlohmann::json::parse(out.str());
}

// thread names by (pid, tid)
std::map<std::pair<int64_t, int64_t>, std::string> thread_names(const nlohmann::json& doc) {
  std::map<std::pair<int64_t, int64_t>, std::string> out;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") out[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}] = e["args"]["name"];
  }
  return out;
}

}  // namespace

TEST_CASE("the trace puts TP and PP communication on tracks of their own, per-layer slices with FLOPs and bytes, flows paired") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 8;
  const nlohmann::json doc = trace_of(m, p);
  const auto names = thread_names(doc);
  std::set<std::string> used;  // thread names that hold slices
  int64_t layer_slices = 0, tp_slices = 0;
  std::map<int64_t, int> flow_starts, flow_finishes;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") {
      used.insert(names.at({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}));
      const std::string op = e["args"].value("op", "");
      if (op == "layer forward" || op == "layer backward") {
        ++layer_slices;
        CHECK(e["args"]["flops"].get<double>() > 0);
        CHECK(e["args"].contains("layer"));
      }
      if (op == "TP collectives") {
        ++tp_slices;
        CHECK(e["args"]["bytes"].get<double>() > 0);
      }
      if (op == "send activation" || op == "send gradient" || op == "dp reduce") CHECK(e["args"]["bytes"].get<double>() > 0);
    }
    if (e["ph"] == "s") ++flow_starts[e["id"].get<int64_t>()];
    if (e["ph"] == "f") ++flow_finishes[e["id"].get<int64_t>()];
  }
  CHECK(used.count("compute") == 1);
  CHECK(used.count("TP comm (exposed)") == 1);
  CHECK(used.count("PP send to next stage") == 1);
  CHECK(used.count("PP send to previous stage") == 1);
  CHECK(used.count("DP reduce") == 1);
  // 24 layers, 4 micro-batches, forward and backward (the last micro-batch's backward on each
  // stage is split per gradient bucket and drawn whole).
  CHECK(layer_slices >= 24 * 4 * 2 - 24);
  CHECK(tp_slices > 0);
  // Every send's flow has exactly one start and one finish: 2 micro-batch transfers each way per micro-batch.
  CHECK(flow_starts.size() == 2 * 4);
  CHECK(flow_starts == flow_finishes);
  for (const auto& [id, n] : flow_starts) CHECK(n == 1);
}

TEST_CASE("the trace draws each ZeRO-3 all-gather no earlier than the start of the layer before its own") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p;
  p.dp = 8;
  p.zero_stage = 3;
  p.global_batch = 32;  // 4 micro-batches per rank
  const nlohmann::json doc = trace_of(m, p);
  // Layer slices start and gather slices start, by (layer, micro-batch, pass order).
  std::map<std::tuple<int64_t, int64_t, std::string>, double> layer_start;
  std::vector<std::tuple<int64_t, int64_t, double>> gathers;  // layer, micro-batch, start
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string op = e["args"].value("op", "");
    if (op == "layer forward" || op == "layer backward") {
      layer_start[{e["args"]["layer"].get<int64_t>(), e["args"]["micro_batch"].get<int64_t>(), op}] = e["ts"].get<double>();
    }
    if (op == "ZeRO-3 all-gather") {
      CHECK(e["args"]["bytes"].get<double>() > 0);
      gathers.emplace_back(e["args"]["layer"].get<int64_t>(), e["args"]["micro_batch"].get<int64_t>(), e["ts"].get<double>());
    }
  }
  CHECK(gathers.size() == static_cast<size_t>(m.layers * 4 * 2));  // every layer, every micro-batch, forward and backward
  int64_t checked = 0;
  for (const auto& [layer, mb, start] : gathers) {
    // The forward's gather of layer l (l > 0) waits for layer l - 1's forward to start.
    const auto before = layer_start.find({layer - 1, mb, "layer forward"});
    const auto use = layer_start.find({layer, mb, "layer forward"});
    if (layer == 0 || before == layer_start.end() || use == layer_start.end() || start > use->second) continue;
    INFO("layer " << layer << " micro-batch " << mb);
    CHECK(start >= before->second - 1e-6);
    ++checked;
  }
  CHECK(checked >= (m.layers - 1) * 4);
}

TEST_CASE("the trace of every rank (trace-ranks all) has a process per rank, and is refused above its limit") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 8;
  const nlohmann::json doc = trace_of(m, p, PerfettoOptions{true});
  std::set<int64_t> pids;
  for (const auto& e : doc["traceEvents"]) pids.insert(e["pid"].get<int64_t>());
  CHECK(pids.size() == 8);
  ParallelPlan big;
  big.dp = 8192;
  big.zero_stage = 1;
  big.global_batch = 8192;
  const Hardware hw = h100s(big.gpus());
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  SimulationOptions keep;
  keep.keep_trace = true;
  const Prediction r = predict_iteration(m, big, hw, cost, keep);
  std::ostringstream out;
  CHECK_THROWS_AS(write_perfetto_trace(out, r, PerfettoOptions{true}), InputError);
  try {
    write_perfetto_trace(out, r, PerfettoOptions{true});
  } catch (const InputError& e) {
    CHECK_THAT(e.problems()[0], Catch::Contains("--trace-ranks") && Catch::Contains("8192 ranks") && Catch::Contains("4096 ranks"));
  }
}
