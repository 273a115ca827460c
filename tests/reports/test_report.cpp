// `trainsim report`: chart geometry (ticks, labels, bars, log axes), sections from each kind of
// output, and refusals naming the file and key.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "reports/report_document.hpp"
#include "reports/svg_chart.hpp"

using namespace trainsim;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

nlohmann::json fixture(const std::string& name) { return load_json_file(std::string(TRAINSIM_TEST_DATA) + "/" + name); }

}  // namespace

TEST_CASE("axis ticks: 1-2-5 steps covering the range, decades on log axes, labels as precise as the step") {
  CHECK(svg::axis_ticks(0, 1.9, false) == std::vector<double>{0, 0.5, 1.0, 1.5});
  CHECK(svg::axis_ticks(0, 100, false) == std::vector<double>{0, 20, 40, 60, 80, 100});
  CHECK(svg::axis_ticks(10, 1e6, true) == std::vector<double>{10, 100, 1e3, 1e4, 1e5, 1e6});
  const std::vector<std::string> close = svg::tick_labels(svg::axis_ticks(1.595, 1.62, false), false);
  CHECK(std::adjacent_find(close.begin(), close.end()) == close.end());  // no two alike
  CHECK(close.front() == "1.595");
  CHECK(svg::tick_labels({0, 20000, 40000}, false) == std::vector<std::string>{"0k", "20k", "40k"});
  CHECK(svg::tick_labels({100, 1000, 10000}, true) == std::vector<std::string>{"100", "1000", "10k"});
  CHECK(svg::escape_xml("a<b & \"c\">") == "a&lt;b &amp; &quot;c&quot;&gt;");
}

TEST_CASE("stacked bars: one rectangle per non-zero segment, a legend entry per segment, the limit line") {
  svg::StackedBars c;
  c.title = "Memory <per GPU>";
  c.unit = "GiB";
  c.row_labels = {"stage 0", "stage 1"};
  c.segment_labels = {"weights", "activations", "other"};
  c.values = {{10, 20, 0}, {5, 0, 1}};
  c.limit = 80;
  c.limit_label = "GPU memory";
  const std::string svg = svg::stacked_bars(c);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(count(svg, "<title>stage ") == 4);  // the four non-zero segments, each with its tooltip
  CHECK(count(svg, "stroke-dasharray") == 1);
  CHECK(svg.find("Memory &lt;per GPU&gt;") != std::string::npos);
  CHECK(svg.find(">activations<") != std::string::npos);
}

TEST_CASE("x-y charts leave out what a log axis cannot show, and draw y = x when asked") {
  svg::XyChart c;
  c.title = "t";
  c.log_x = c.log_y = c.diagonal = true;
  c.series = {{"runs", {{100, 110}, {0, 5}, {1000, -1}, {1e4, 9e3}}, false}};
  const std::string svg = svg::xy_chart(c);
  CHECK(count(svg, "<circle") == 2);
  CHECK(count(svg, "stroke-dasharray") == 1);
  svg::XyChart line;
  line.series = {{"loss", {{2, 3.0}, {0, 5.0}, {1, 4.0}}, true}};
  CHECK(count(svg::xy_chart(line), "<polyline") == 1);
}

TEST_CASE("an x-y chart's y axis spans the data when it need not start at 0 (goodput near 100%)") {
  svg::XyChart c;
  c.series = {{"goodput", {{1, 99.1}, {2, 99.6}, {4, 99.8}}, true}};
  CHECK(svg::xy_chart(c).find(">0<") != std::string::npos);  // from 0 by default
  c.y_from_zero = false;
  const std::string zoomed = svg::xy_chart(c);
  CHECK(zoomed.find(">0<") == std::string::npos);
  CHECK(zoomed.find(">99.8<") != std::string::npos);  // 0.2 steps over the data
}

TEST_CASE("a search's section leads with the answer: days, $, goodput, each GPU type's best and the accuracy") {
  nlohmann::json plan = {{"dp", 128}, {"tp", 1}, {"pp", 1}, {"micro_batch", 1}, {"global_batch", 512}, {"zero_stage", 1}};
  const auto entry = [&](const char* gpu, double usd) {
    return nlohmann::json{{"gpu", gpu}, {"gpus", 128}, {"plan", plan}, {"fits", true}, {"iteration_time_s", 3.5},
                          {"tokens_per_s_per_gpu", 9000.0}, {"mfu", 0.5}, {"memory_peak_gib", 60.0},
                          {"cost", {{"usd_per_gpu_hour", usd}}}, {"usd_per_million_tokens", 0.0744},
                          {"train_days", 19.3}, {"train_usd", 148e3}, {"goodput", {{"goodput", 0.999}}}};
  };
  const auto pick = [](const char* gpu, double usd, double days, double total) {
    return nlohmann::json{{"gpu", gpu}, {"gpus", 128}, {"usd_per_gpu_hour", usd}, {"plan", "dp128 tp1 pp1 mb1 z1 none"},
                          {"iteration_time_s", 3.5}, {"usd_per_million_tokens", 0.07}, {"train_days", days}, {"train_usd", total}};
  };
  nlohmann::json answer = {{"objective", "cost"}, {"best", pick("h100-sxm-80gb", 2.5, 19.3, 148e3)}, {"deadline_days", 30.0},
                           {"deadline_met", true},
                           {"best_per_gpu_type", {pick("h100-sxm-80gb", 2.5, 19.3, 148e3), pick("h200-sxm-141gb", 3.8, 18.8, 219e3)}},
                           {"cost_model", "datasheet (h100)"}, {"accuracy", "validated: 8.2%"}};
  nlohmann::json search = {{"schema", "trainsim.search"}, {"inputs", {{"model", {{"name", "llama3-8b"}}}, {"objective", "cost"}}},
                           {"evaluated", 10}, {"feasible", 4}, {"elapsed_s", 0.5}, {"plans", {entry("h100-sxm-80gb", 2.5)}},
                           {"pareto", nlohmann::json::array()}, {"answer", answer}};
  const ReportSection s = report_section(search, "s.json");
  REQUIRE(s.facts.size() >= 5);
  CHECK(s.facts[0] == "**Answer** (objective cost): dp128 tp1 pp1 mb1 z1 none on 128 × h100-sxm-80gb at $2.50/GPU-hour: 19.3 days, $148 k");
  CHECK(s.facts[1].find("deadline 30.0 days: met") == 0);
  CHECK(s.facts[3].find("best on h200-sxm-141gb: ") == 0);
  CHECK(s.facts[5] == "accuracy: validated: 8.2%");
  CHECK(s.table[0] == std::vector<std::string>{"#", "GPUs", "plan", "iteration", "tokens/s/GPU", "MFU", "memory GiB",
                                               "$ per M tokens", "days", "$ total", "goodput"});
  CHECK(s.table[1][7] == "0.074");
  CHECK(s.charts[0].svg.find(">h200-sxm-141gb<") != std::string::npos);  // a series per GPU type
}

TEST_CASE("a prediction's section: headline figures, its breakdown and memory charts, the phase table") {
  const ReportSection s = report_section(fixture("compare/prediction.json"), "prediction.json");
  CHECK(s.title.find("Prediction: gpt-tiny") == 0);
  REQUIRE(s.charts.size() == 2);
  CHECK(s.charts[1].svg.find("GPU memory") != std::string::npos);
  REQUIRE(s.table.size() == 7);  // header + six phases
  CHECK(s.table[1][0] == "compute");
  CHECK(s.source == "prediction.json");
}

TEST_CASE("a measurement's section charts the loss and the time per step") {
  const ReportSection s = report_section(fixture("compare/measured_close.json"), "m.json");
  REQUIRE(s.charts.size() == 3);
  CHECK(s.charts[0].caption == "Loss per step");
  CHECK(count(s.charts[0].svg, "<polyline") == 1);
  CHECK(std::any_of(s.facts.begin(), s.facts.end(), [](const std::string& f) { return f.rfind("loss ", 0) == 0; }));
}

TEST_CASE("search and validation sections from minimal documents") {
  nlohmann::json plan = {{"dp", 8}, {"tp", 2}, {"pp", 2}, {"vpp", 2}, {"micro_batch", 1}, {"global_batch", 64}, {"zero_stage", 1},
                         {"recompute", "selective"}, {"sequence_parallel", true}, {"schedule", "interleaved"}, {"precision", "bf16"}};
  nlohmann::json entry = {{"gpu", "h100-sxm-80gb"}, {"gpus", 32}, {"plan", plan}, {"fits", true}, {"iteration_time_s", 2.5},
                          {"tokens_per_s_per_gpu", 3000.0}, {"mfu", 0.45}, {"memory_peak_gib", 60.0},
                          {"cost", {{"usd_per_gpu_hour", 3.0}}}, {"usd_per_million_tokens", 0.8}};
  nlohmann::json search = {{"schema", "trainsim.search"}, {"inputs", {{"model", {{"name", "llama3-8b"}}}, {"objective", "time"}}},
                           {"evaluated", 1000}, {"feasible", 400}, {"elapsed_s", 0.5}, {"plans", {entry, entry}}, {"pareto", {entry}}};
  const ReportSection s = report_section(search, "s.json");
  REQUIRE(s.table.size() == 3);
  CHECK(s.table[1][2] == "DP 8 · TP 2 · PP 2 ×2 (interleaved) · micro-batch 1 · global batch 64 · ZeRO-1 · SP · recompute selective · bf16");
  CHECK(s.table[0].back() == "$ per M tokens");
  CHECK(count(s.charts[0].svg, "<circle") == 3);

  nlohmann::json half = {{"name", "held-out half"}, {"count", 2}, {"mean_abs_error", 0.05}, {"max_abs_error", 0.08}};
  nlohmann::json validation = {
      {"schema", "trainsim.validation"},
      {"inputs", {{"runs_file", "runs.json"}}},
      {"summary", {{"count", 2}, {"mean_abs_error", 0.05}, {"fit_half", half}, {"held_out_half", half}, {"groups", {half}}}},
      {"runs", {{{"group", "a"}, {"predicted_tokens_per_s_per_gpu", 100.0}, {"measured_tokens_per_s_per_gpu", 110.0}},
                {{"group", "b"}, {"predicted_tokens_per_s_per_gpu", 2000.0}, {"measured_tokens_per_s_per_gpu", 1900.0}}}}};
  const ReportSection v = report_section(validation, "v.json");
  CHECK(v.table.size() == 4);  // header, one group, two halves
  CHECK(count(v.charts[0].svg, "<circle") == 2);
  CHECK(v.charts[0].svg.find(">a<") != std::string::npos);  // a legend entry per group
}

TEST_CASE("a profile's section: GEMM, memory-bound and collective curves, one table row per collective") {
  const ReportSection s = report_section(fixture("profiles/synthetic-gpu.json"), "gpu.json");
  REQUIRE(s.charts.size() == 3);
  CHECK(s.charts[0].svg.find("FLOPs per GEMM") != std::string::npos);
  CHECK(count(s.charts[2].svg, "<polyline") == 1);
  CHECK(s.table.size() == 2);
}

TEST_CASE("a model's section: memory per GPU on each pipeline stage") {
  nlohmann::json memory = {{"weights_gib", 7.5}, {"gradients_gib", 15.0}, {"optimizer_gib", 45.0}, {"activations_gib", 17.0},
                           {"other_gib", 0.0}, {"total_gib", 84.5}};
  nlohmann::json doc = {{"schema", "trainsim.model"},
                        {"inputs", {{"model", {{"name", "llama3-8b"}}}, {"plan", {{"pp", 2}, {"schedule", "1f1b"}}}}},
                        {"params", {{"total", 8.03e9}, {"per_layer", {{"total", 2.18e8}}}}},
                        {"memory_peak_gib", 84.5},
                        {"memory_peak_stage", 0},
                        {"memory_stages", {{{"stage", 0}, {"layers", 16}, {"memory", memory}}, {{"stage", 1}, {"layers", 16}, {"memory", memory}}}}};
  const ReportSection s = report_section(doc, "m.json");
  CHECK(s.table.size() == 3);
  CHECK(s.table[1].back() == "84.50");
  CHECK(count(s.charts[0].svg, "<title>stage 1:") == 4);  // four non-zero parts on stage 1
}

TEST_CASE("the report refuses other files, naming the file, the schema or the key") {
  CHECK_THROWS_WITH(report_section(nlohmann::json::array(), "x.json"), Catch::Contains("x.json: not a trainsim JSON output"));
  CHECK_THROWS_WITH(report_section({{"schema", "trainsim.catalog"}}, "c.json"), Catch::Contains("schema \"trainsim.catalog\" is not charted"));
  nlohmann::json broken = fixture("compare/prediction.json");
  broken.erase("iteration_time_s");
  CHECK_THROWS_WITH(report_section(broken, "b.json"), Catch::Contains("b.json: key /iteration_time_s is missing"));
}

TEST_CASE("Markdown references each chart file, HTML holds the charts inline") {
  const std::vector<ReportSection> sections = {report_section(fixture("compare/prediction.json"), "p.json")};
  const std::string md = render_markdown("T", sections, {{"r-1-1.svg", "r-1-2.svg"}});
  CHECK(md.rfind("# T\n", 0) == 0);
  CHECK(md.find("](r-1-2.svg)") != std::string::npos);
  CHECK(md.find("| phase | time |") != std::string::npos);
  const std::string html = render_html("T", sections);
  CHECK(count(html, "<svg") == 2);
  CHECK(html.find("<th>phase</th>") != std::string::npos);
}
