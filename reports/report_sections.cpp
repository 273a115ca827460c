// The report's sections, one per kind of trainsim output; see report_document.hpp for what each
// shows. Figures are read with report_detail::Reader (report_sections.hpp).
#include <algorithm>
#include <cmath>
#include <functional>

#include "reports/report_sections.hpp"
#include "reports/svg_chart.hpp"
#include "reports/text_table.hpp"

namespace trainsim::report_detail {

namespace {

struct Phase {
  const char* key;
  const char* label;
};
const Phase kPhases[] = {{"compute_s", "compute"},
                         {"tp_comm_exposed_s", "TP comm (exposed)"},
                         {"dp_comm_exposed_s", "DP comm (exposed)"},
                         {"pp_comm_exposed_s", "PP comm (exposed)"},
                         {"bubble_s", "pipeline bubble"},
                         {"optimizer_s", "optimizer"}};
const Phase kMemory[] = {{"weights_gib", "weights"},
                         {"gradients_gib", "gradients"},
                         {"optimizer_gib", "optimizer states"},
                         {"activations_gib", "activations"},
                         {"other_gib", "other"}};

std::vector<std::string> phase_labels() {
  std::vector<std::string> out;
  for (const Phase& p : kPhases) out.emplace_back(p.label);
  return out;
}

std::vector<double> phases_of(const Reader& r, const std::string& object) {
  std::vector<double> out;
  for (const Phase& p : kPhases) out.push_back(r.number(object + "/" + p.key));
  return out;
}

}  // namespace

std::string seconds(double s) {
  if (s == 0) return "0 s";
  if (s >= 1) return format_fixed(s, 3) + " s";
  if (s >= 1e-3) return format_fixed(s * 1e3, 2) + " ms";
  return format_fixed(s * 1e6, 1) + " us";
}

// "DP 8 · TP 4 · PP 2 ×3 (interleaved) · micro-batch 1 · global batch 512 · ZeRO-1 · SP · recompute selective · bf16"
std::string plan_summary(const json& p) {
  const auto n = [&](const char* key) { return p.contains(key) && p[key].is_number() ? p[key].get<int64_t>() : int64_t{1}; };
  const auto s = [&](const char* key) { return p.contains(key) && p[key].is_string() ? p[key].get<std::string>() : std::string("?"); };
  std::string out = "DP " + std::to_string(n("dp")) + " · TP " + std::to_string(n("tp")) + " · PP " + std::to_string(n("pp"));
  if (n("vpp") > 1) out += " ×" + std::to_string(n("vpp"));
  if (n("pp") > 1) out += " (" + s("schedule") + ")";
  if (n("cp") > 1) out += " · CP " + std::to_string(n("cp"));
  if (n("ep") > 1) out += " · EP " + std::to_string(n("ep"));
  out += " · micro-batch " + std::to_string(n("micro_batch")) + " · global batch " + std::to_string(n("global_batch"));
  out += " · ZeRO-" + std::to_string(p.contains("zero_stage") ? p["zero_stage"].get<int64_t>() : 0);
  if (p.value("sequence_parallel", false)) out += " · SP";
  out += " · recompute " + s("recompute");
  if (p.contains("recompute_method")) out += " (" + s("recompute_method") + " " + std::to_string(n("recompute_layers")) + ")";
  out += " · " + s("precision");
  return out;
}

svg::StackedBars breakdown_bars(const std::string& title, const std::vector<std::string>& rows, const std::vector<std::vector<double>>& values) {
  svg::StackedBars c;
  c.title = title;
  c.unit = "seconds per iteration";
  c.row_labels = rows;
  c.segment_labels = phase_labels();
  c.values = values;
  return c;
}

ReportSection prediction_section(const Reader& r, const json& doc) {
  ReportSection s;
  const std::string gpu = r.text("/inputs/hardware/gpu/name"), model = r.text("/inputs/model/name");
  const int64_t gpus = static_cast<int64_t>(r.number("/inputs/hardware/gpus"));
  s.title = "Prediction: " + model + " on " + std::to_string(gpus) + " × " + gpu;
  s.facts.push_back("plan: " + plan_summary(r.at("/inputs/plan")));
  const double time = r.number("/iteration_time_s");
  s.facts.push_back("iteration " + seconds(time) + " · " + format_si(r.number("/tokens_per_s_per_gpu")) + " tokens/s per GPU · MFU " +
                    format_percent(r.number("/mfu")) + " · HFU " + format_percent(r.number("/hfu")));
  const double peak = r.number("/memory_peak_gib"), capacity = r.number("/memory_capacity_gib");
  s.facts.push_back("memory " + format_fixed(peak, 1) + " of " + format_fixed(capacity, 1) + " GiB on the busiest stage (" +
                    std::to_string(static_cast<int64_t>(r.number("/memory_peak_stage"))) + ")" +
                    (doc.value("fits", true) ? "" : ": does not fit — " + r.text("/infeasible_reason", "over capacity")));
  if (const auto usd = r.maybe_number("/cost/usd_per_iteration"); usd && *usd > 0) {
    s.facts.push_back("$" + format_fixed(*usd, 4) + " per iteration at $" + format_fixed(r.number("/cost/usd_per_gpu_hour"), 2) +
                      " per GPU-hour");
  }
  const json::json_pointer extrapolated("/inputs/extrapolated");
  if (doc.contains(extrapolated) && doc.at(extrapolated).is_array() && !doc.at(extrapolated).empty()) {
    s.facts.push_back("some costs were extrapolated beyond the profile's measured points (inputs.extrapolated)");
  }
  const std::vector<double> phases = phases_of(r, "/breakdown");
  s.table.push_back({"phase", "time", "share of the iteration"});
  for (size_t i = 0; i < phases.size(); ++i) {
    s.table.push_back({kPhases[i].label, seconds(phases[i]), format_percent(time > 0 ? phases[i] / time : 0.0)});
  }
  s.charts.push_back({"Where the iteration goes (critical stage)", svg::stacked_bars(breakdown_bars("Iteration time", {"predicted"}, {phases}))});
  svg::StackedBars memory;
  memory.title = "Memory per GPU (busiest stage)";
  memory.unit = "GiB";
  memory.row_labels = {"stage " + std::to_string(static_cast<int64_t>(r.number("/memory_peak_stage")))};
  std::vector<double> parts;
  for (const Phase& p : kMemory) {
    memory.segment_labels.emplace_back(p.label);
    parts.push_back(r.number(std::string("/memory/") + p.key));
  }
  memory.values = {parts};
  memory.limit = capacity;
  memory.limit_label = "GPU memory " + format_fixed(capacity, 0) + " GiB";
  s.charts.push_back({"Memory per GPU against the GPU's capacity", svg::stacked_bars(memory)});
  if (doc.contains("goodput")) add_goodput_charts(r, s);
  return s;
}

ReportSection measurement_section(const Reader& r) {
  ReportSection s;
  const bool trace = r.text("/backend") == "trace";  // `trace --out`: a profiler trace of the user's own run
  const std::string model = r.text("/inputs/model/name", trace ? "model not stated" : "?");
  s.title = (trace ? "Measured from a profiler trace: " + r.text("/trace/device", "device not named") + ", " + model
                   : "Measured run: " + model + ", " + r.text("/backend") + " backend") +
            ", " + std::to_string(static_cast<int64_t>(r.number("/ranks"))) + " rank(s)";
  if (!trace || r.maybe_number("/inputs/plan/tp")) s.facts.push_back("plan: " + plan_summary(r.at("/inputs/plan")));
  s.facts.push_back("median iteration " + seconds(r.number("/iteration_time_s")) + " after " +
                    std::to_string(static_cast<int64_t>(r.number("/warmup_iterations"))) + " warm-up iteration(s)");
  if (!trace) s.facts.push_back("memory peak " + format_fixed(r.number("/memory_peak_gib"), 3) + " GiB (the runtime's own allocations)");
  svg::Series loss{"loss", {}, true}, time{"iteration time (s)", {}, true};
  const json& iterations = r.array("/iterations");
  for (size_t i = 0; i < iterations.size(); ++i) {
    const std::string at = "/iterations/" + std::to_string(i);
    const double step = r.number(at + "/iteration");
    // A loss that was not finite is written as null (and a trace has none): no point for it.
    if (const std::optional<double> l = r.maybe_number(at + "/loss")) loss.points.emplace_back(step, *l);
    time.points.emplace_back(step, r.number(at + "/time_s"));
  }
  if (!loss.points.empty()) {
    s.facts.push_back("loss " + format_fixed(loss.points.front().second, 4) + " → " + format_fixed(loss.points.back().second, 4) + " over " +
                      std::to_string(loss.points.size()) + " steps");
  }
  const std::vector<double> phases = phases_of(r, "/breakdown");
  s.table.push_back({"phase", "median time"});
  for (size_t i = 0; i < phases.size(); ++i) s.table.push_back({kPhases[i].label, seconds(phases[i])});
  if (!loss.points.empty()) s.charts.push_back({"Loss per step", svg::xy_chart({"Training loss", "step", "loss", false, false, false, {loss}})});
  s.charts.push_back({trace ? "Iteration time per profiler step" : "Iteration time per step (the first ones are warm-up)",
                      svg::xy_chart({"Iteration time", "step", "seconds", false, false, false, {time}})});
  s.charts.push_back({"Where the median iteration goes", svg::stacked_bars(breakdown_bars("Iteration time", {"measured"}, {phases}))});
  return s;
}

ReportSection comparison_section(const Reader& r) {
  ReportSection s;
  s.title = "Predicted vs measured: " + r.text("/inputs/model_name");
  s.facts.push_back("predicted: " + r.text("/inputs/predicted_path") + " · measured: " + r.text("/inputs/measured_path"));
  if (const auto error = r.maybe_number("/iteration_time_error")) {
    s.facts.push_back("iteration time error " + format_percent(*error) + " (predicted / measured − 1), tolerance " +
                      format_percent(r.number("/inputs/tolerance")));
  }
  const json& figures = r.at("/figures");
  if (!figures.is_object()) r.fail("/figures", "is not an object");
  s.table.push_back({"figure", "predicted", "measured", "error"});
  for (const auto& [name, f] : figures.items()) {
    const std::string at = "/figures/" + name;
    const double predicted = r.number(at + "/predicted"), measured = r.number(at + "/measured");
    const auto error = r.maybe_number(at + "/error");
    const bool is_time = name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0;
    s.table.push_back({name, is_time ? seconds(predicted) : format_fixed(predicted, 3), is_time ? seconds(measured) : format_fixed(measured, 3),
                       error ? format_percent(*error) : "n/a"});
  }
  std::vector<double> predicted, measured;
  for (const Phase& p : kPhases) {
    predicted.push_back(r.number(std::string("/figures/") + p.key + "/predicted"));
    measured.push_back(r.number(std::string("/figures/") + p.key + "/measured"));
  }
  s.charts.push_back({"The two iterations, phase by phase",
                      svg::stacked_bars(breakdown_bars("Iteration time", {"predicted", "measured"}, {predicted, measured}))});
  return s;
}

ReportSection validation_section(const Reader& r) {
  ReportSection s;
  s.title = "Validation against published runs";
  s.facts.push_back("runs: " + r.text("/inputs/runs_file") + " · " + std::to_string(static_cast<int64_t>(r.number("/summary/count"))) +
                    " runs, mean |error| " + format_percent(r.number("/summary/mean_abs_error")));
  s.facts.push_back("held-out half: mean |error| " + format_percent(r.number("/summary/held_out_half/mean_abs_error")) + ", max " +
                    format_percent(r.number("/summary/held_out_half/max_abs_error")) + " (" +
                    std::to_string(static_cast<int64_t>(r.number("/summary/held_out_half/count"))) + " runs the constants were not fitted on)");
  s.table.push_back({"group", "runs", "unsupported", "mean |error|", "max |error|"});
  const auto row = [&](const std::string& at) {
    s.table.push_back({r.text(at + "/name"), std::to_string(static_cast<int64_t>(r.number(at + "/count"))),
                       std::to_string(static_cast<int64_t>(r.maybe_number(at + "/unsupported").value_or(0))),
                       format_percent(r.number(at + "/mean_abs_error")), format_percent(r.number(at + "/max_abs_error"))});
  };
  const json& groups = r.array("/summary/groups");
  for (size_t i = 0; i < groups.size(); ++i) row("/summary/groups/" + std::to_string(i));
  row("/summary/fit_half");
  row("/summary/held_out_half");
  if (const auto unsupported = r.maybe_number("/summary/unsupported"); unsupported && *unsupported > 0) {
    s.facts.push_back(std::to_string(static_cast<int64_t>(*unsupported)) + " runs not simulated (each run's reason: key runs/*/reason)");
  }
  std::vector<svg::Series> series;
  const json& runs = r.array("/runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string at = "/runs/" + std::to_string(i), group = r.text(at + "/group");
    auto it = std::find_if(series.begin(), series.end(), [&](const svg::Series& x) { return x.label == group; });
    if (it == series.end()) it = series.insert(series.end(), svg::Series{group, {}, false});
    const auto predicted = r.maybe_number(at + "/predicted_tokens_per_s_per_gpu");
    const auto measured = r.maybe_number(at + "/measured_tokens_per_s_per_gpu");
    if (predicted && measured) it->points.emplace_back(*measured, *predicted);
  }
  s.charts.push_back({"Each run: predicted against measured tokens/s per GPU (on the dashed line: exact)",
                      svg::xy_chart({"Predicted vs measured throughput", "measured tokens/s per GPU", "predicted tokens/s per GPU", true,
                                     true, true, series})});
  return s;
}

ReportSection model_section(const Reader& r) {
  ReportSection s;
  s.title = "Model: " + r.text("/inputs/model/name");
  s.facts.push_back("plan: " + plan_summary(r.at("/inputs/plan")));
  s.facts.push_back(format_si(r.number("/params/total")) + " parameters (" + format_si(r.number("/params/per_layer/total")) +
                    " per layer), peak " + format_fixed(r.number("/memory_peak_gib"), 1) + " GiB per GPU on stage " +
                    std::to_string(static_cast<int64_t>(r.number("/memory_peak_stage"))));
  svg::StackedBars memory;
  memory.title = "Memory per GPU, by pipeline stage";
  memory.unit = "GiB";
  for (const Phase& p : kMemory) memory.segment_labels.emplace_back(p.label);
  s.table.push_back({"stage", "layers", "weights", "gradients", "optimizer", "activations", "other", "total GiB"});
  const json& stages = r.array("/memory_stages");
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string at = "/memory_stages/" + std::to_string(i);
    const std::string stage = std::to_string(static_cast<int64_t>(r.number(at + "/stage")));
    memory.row_labels.push_back("stage " + stage);
    std::vector<double> parts;
    std::vector<std::string> row = {stage, std::to_string(static_cast<int64_t>(r.number(at + "/layers")))};
    for (const Phase& p : kMemory) {
      parts.push_back(r.number(at + "/memory/" + p.key));
      row.push_back(format_fixed(parts.back(), 2));
    }
    row.push_back(format_fixed(r.number(at + "/memory/total_gib"), 2));
    memory.values.push_back(parts);
    s.table.push_back(row);
  }
  s.charts.push_back({"Memory per GPU on each pipeline stage", svg::stacked_bars(memory)});
  return s;
}

namespace {

// A profile's tables as curves: `point_y` of each point against `point_x` (point: its JSON pointer).
using PointValue = std::function<double(const std::string& point)>;
std::vector<svg::Series> profile_curves(const Reader& r, const std::string& table, const std::string& name_key, const PointValue& point_x,
                                        const PointValue& point_y, bool line) {
  std::vector<svg::Series> out;
  const json& entries = r.array("/" + table);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string at = "/" + table + "/" + std::to_string(i);
    std::string label = r.text(at + "/" + name_key);
    if (const auto ranks = r.maybe_number(at + "/ranks")) {
      label += " ×" + std::to_string(static_cast<int64_t>(*ranks));
      if (const auto nodes = r.maybe_number(at + "/nodes"); nodes && *nodes > 1) label += " (" + std::to_string(static_cast<int64_t>(*nodes)) + " nodes)";
    }
    svg::Series series{label, {}, line};
    const json& points = r.array(at + "/points");
    for (size_t k = 0; k < points.size(); ++k) {
      const std::string point = at + "/points/" + std::to_string(k);
      series.points.emplace_back(point_x(point), point_y(point));
    }
    out.push_back(series);
  }
  return out;
}

}  // namespace

ReportSection profile_section(const Reader& r) {
  ReportSection s;
  s.title = "Hardware profile: " + r.text("/provenance/device") + " (" + r.text("/provenance/device_kind") + ")";
  s.facts.push_back(std::to_string(static_cast<int64_t>(r.number("/provenance/devices"))) + " device(s) · measured " +
                    r.text("/provenance/date_utc") + " on " + r.text("/provenance/host") + " · trainsim " + r.text("/provenance/tool_version") +
                    " (" + r.text("/provenance/git_revision") + ")");
  const std::string versions = "driver " + r.text("/provenance/driver", "-") + " · CUDA " + r.text("/provenance/cuda", "-") + " · cuBLAS " +
                               r.text("/provenance/cublas", "-") + " · NCCL " + r.text("/provenance/nccl", "-");
  if (r.text("/provenance/device_kind") != "cpu") s.facts.push_back(versions);
  // Rates from the median time (the files' derived figures are optional).
  const PointValue flops = [&](const std::string& pt) { return 2.0 * r.number(pt + "/m") * r.number(pt + "/n") * r.number(pt + "/k"); };
  const PointValue bytes = [&](const std::string& pt) { return r.number(pt + "/bytes"); };
  const PointValue median = [&](const std::string& pt) { return r.number(pt + "/timing/median_s"); };
  s.charts.push_back({"GEMMs: achieved TFLOP/s against the work of the GEMM (2mnk)",
                      svg::xy_chart({"GEMM throughput", "FLOPs per GEMM (2mnk)", "TFLOP/s", true, false, false,
                                     profile_curves(r, "gemm", "dtype", flops, [&](const std::string& pt) { return flops(pt) / median(pt) / 1e12; },
                                                    false)})});
  s.charts.push_back({"Memory-bound kernels: achieved bandwidth against bytes moved",
                      svg::xy_chart({"Memory-bound kernels", "bytes", "GB/s", true, false, false,
                                     profile_curves(r, "memory_bound", "kernel", bytes,
                                                    [&](const std::string& pt) { return bytes(pt) / median(pt) / 1e9; }, true)})});
  const std::vector<svg::Series> collectives = profile_curves(r, "collectives", "kind", bytes,
                                                              [&](const std::string& pt) { return r.number(pt + "/busbw_gb_per_s"); }, true);
  s.charts.push_back({"Collectives: bus bandwidth (nccl-tests convention) against message size",
                      svg::xy_chart({"Collectives", "bytes", "bus bandwidth (GB/s)", true, false, false, collectives})});
  s.table.push_back({"collective", "points", "largest message", "peak bus bandwidth"});
  for (const svg::Series& c : collectives) {
    double peak = 0, largest = 0;
    for (const auto& [bytes, busbw] : c.points) peak = std::max(peak, busbw), largest = std::max(largest, bytes);
    s.table.push_back({c.label, std::to_string(c.points.size()), format_si(largest) + "B", format_fixed(peak, 1) + " GB/s"});
  }
  return s;
}

}  // namespace trainsim::report_detail
