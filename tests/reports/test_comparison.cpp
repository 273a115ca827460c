// compare: relative errors per phase, the tolerance, model/plan mismatches, and the measurement
// JSON round trip (measurement_json -> read_measurement gives back the same Measurement).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/errors.hpp"
#include "reports/comparison.hpp"
#include "reports/measurement_json.hpp"

using namespace trainsim;

namespace {

const std::string kData = std::string(TRAINSIM_TEST_DATA) + "/compare/";

ComparedRun run_with(const IterationFigures& figures, RunIdentity identity = {{"/inputs/plan/tp", "2"}}) {
  ComparedRun run;
  run.path = "x.json";
  run.figures = figures;
  run.identity = std::move(identity);
  return run;
}

IterationFigures figures_of(double iteration_s, double bubble_s) {
  IterationFigures f;
  f.iteration_time_s = iteration_s;
  f.phases.compute_s = 0.5 * iteration_s;
  f.phases.tp_comm_exposed_s = 0.1;
  f.phases.bubble_s = bubble_s;
  f.memory_peak_gib = 10;
  return f;
}

// A measured iteration's phases: forward and backward, then the others in predict's order.
PhaseBreakdown measured_phases(double forward_s, double backward_s, double tp_s, double dp_s, double pp_s, double bubble_s, double optimizer_s) {
  PhaseBreakdown p;
  p.forward_s = forward_s;
  p.backward_s = backward_s;
  p.compute_s = forward_s + backward_s;
  p.tp_comm_exposed_s = tp_s;
  p.dp_comm_exposed_s = dp_s;
  p.pp_comm_exposed_s = pp_s;
  p.bubble_s = bubble_s;
  p.optimizer_s = optimizer_s;
  return p;
}

Measurement sample_measurement() {
  Measurement m;
  m.warmup_iterations = 1;
  m.ranks = 4;
  m.backend = "cpu";
  for (int i = 0; i < 3; ++i) {
    IterationRecord it;
    it.iteration = i;
    it.loss = i == 2 ? std::nan("") : 5.5 - 0.1 * i;  // a diverged loss is written as null
    it.phases = measured_phases(0.01 * (i + 1), 0.02, 0.003, 0.004, 0.005, 0.006, 0.007);
    it.time_s = 0.055 + i * 0.01;
    m.iterations.push_back(it);
  }
  m.iteration_time_s = 0.065;
  m.memory_peak_gib = 1.25;
  m.breakdown = measured_phases(0.02, 0.02, 0.003, 0.004, 0.005, 0.006, 0.007);
  return m;
}

nlohmann::json written(const Measurement& m) {
  return nlohmann::json::parse(measurement_json(m, {{"model", {{"name", "gpt-tiny"}}}, {"plan", {{"tp", 2}}}}).dump());
}

}  // namespace

TEST_CASE("relative error is predicted over measured minus one, n/a when nothing was measured") {
  CHECK(*relative_error(1.2, 1.0) == Approx(0.2));
  CHECK(*relative_error(0.6, 1.0) == Approx(-0.4));
  CHECK_FALSE(relative_error(1.0, 0.0).has_value());
}

TEST_CASE("compare lines up iteration time, every breakdown phase and memory, with their errors") {
  const Comparison c = compare_runs(run_with(figures_of(1.0, 0.2)), run_with(figures_of(1.25, 0.0)), 0.15);
  REQUIRE(c.figures.size() == 8);
  const char* keys[] = {"iteration_time_s", "compute_s",  "tp_comm_exposed_s", "dp_comm_exposed_s",
                        "pp_comm_exposed_s", "bubble_s", "optimizer_s",       "memory_peak_gib"};
  for (size_t i = 0; i < 8; ++i) CHECK(c.figures[i].key == keys[i]);
  CHECK(*c.iteration_time().error == Approx(-0.2));
  CHECK(*c.figures[1].error == Approx(-0.2));               // compute 0.5 vs 0.625
  CHECK(*c.figures[2].error == Approx(0.0));                // TP 0.1 vs 0.1
  CHECK_FALSE(c.figures[3].error.has_value());              // DP: 0 measured
  CHECK_FALSE(c.figures[5].error.has_value());              // bubble: 0.2 predicted, 0 measured
  CHECK(*c.figures[7].error == Approx(0.0));
  CHECK(c.over_tolerance());                                // |-20%| > 15%
  CHECK_FALSE(compare_runs(run_with(figures_of(1.0, 0)), run_with(figures_of(1.1, 0)), 0.15).over_tolerance());
  CHECK_FALSE(compare_runs(run_with(figures_of(1.0, 0)), run_with(figures_of(1.25, 0)), 0.25).over_tolerance());
}

TEST_CASE("measured figures carry the run's breakdown, its compute the forward and backward medians added") {
  Measurement m = sample_measurement();
  m.breakdown = PhaseBreakdown{};
  summarize_iterations(m);  // iterations 1 and 2 (one warm-up): forward 0.02 and 0.03, backward 0.02
  const IterationFigures f = measured_figures(m);
  CHECK(f.phases.forward_s == Approx(0.025));
  CHECK(f.phases.compute_s == Approx(0.045));
  CHECK(f.phases.tp_comm_exposed_s == 0.003);
  CHECK(f.phases.dp_comm_exposed_s == 0.004);
  CHECK(f.phases.pp_comm_exposed_s == 0.005);
  CHECK(f.phases.bubble_s == 0.006);
  CHECK(f.phases.optimizer_s == 0.007);
  CHECK(f.iteration_time_s == Approx(0.07));
  CHECK(f.memory_peak_gib == 1.25);
}

TEST_CASE("a measured iteration's bubble is what its wall time leaves after the other phases") {
  PhaseBreakdown p;
  p.forward_s = 0.2;
  p.backward_s = 0.4;
  p.tp_comm_exposed_s = 0.1;
  p.optimizer_s = 0.05;
  p.close(1.0);
  CHECK(p.compute_s == Approx(0.6));
  CHECK(p.bubble_s == Approx(0.25));
  p.close(0.5);  // phases longer than the wall time (clock skew): no negative bubble
  CHECK(p.bubble_s == 0);
}

TEST_CASE("differing model and plan keys are listed one by one, and refused") {
  const RunIdentity predicted = {{"/inputs/model/name", "\"gpt-tiny\""}, {"/inputs/plan/dp", "2"}, {"/inputs/plan/tp", "2"}};
  const RunIdentity measured = {{"/inputs/model/name", "\"gpt-tiny\""}, {"/inputs/plan/tp", "1"}, {"/inputs/plan/zero_stage", "0"}};
  const std::vector<InputDifference> d = diff_identities(predicted, measured);
  REQUIRE(d.size() == 3);
  CHECK((d[0].key == "/inputs/plan/dp" && d[0].predicted == "2" && !d[0].measured));
  CHECK((d[1].key == "/inputs/plan/tp" && d[1].predicted == "2" && d[1].measured == "1"));
  CHECK((d[2].key == "/inputs/plan/zero_stage" && !d[2].predicted && d[2].measured == "0"));
  const ComparedRun p = run_with(figures_of(1, 0), predicted);
  const ComparedRun m = run_with(figures_of(1, 0), measured);
  const Comparison c = compare_runs(p, m, 0.15);
  CHECK(c.differences.size() == 3);
  try {
    require_same_inputs(c, p, m);
    FAIL("a plan mismatch must be refused");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 4);
    CHECK_THAT(e.problems()[2], Catch::Contains("/inputs/plan/tp: 1, but the prediction has 2"));
    CHECK_THAT(e.hint(), Catch::Contains("--allow-mismatch"));
  }
  CHECK_NOTHROW(require_same_inputs(compare_runs(p, p, 0.15), p, p));
}

TEST_CASE("the test files of the same run agree, and the plan of another run does not") {
  const ComparedRun predicted = load_predicted_run(kData + "prediction.json");
  const ComparedRun close = load_measured_run(kData + "measured_close.json");
  CHECK(predicted.model_name == "gpt-tiny");
  CHECK(predicted.identity.count("/inputs/plan/micro_batch") == 1);
  CHECK(predicted.identity.count("/inputs/model/hidden") == 1);
  CHECK(predicted.identity.count("/inputs/hardware/gpus") == 0);  // hardware is not compared
  const Comparison agree = compare_runs(predicted, close, 0.05);
  CHECK(agree.differences.empty());
  CHECK_FALSE(agree.over_tolerance());
  const Comparison other = compare_runs(predicted, load_measured_run(kData + "measured_other_plan.json"), 0.15);
  REQUIRE(other.differences.size() == 2);
  CHECK(other.differences[0].key == "/inputs/plan/dp");
  CHECK(other.differences[1].key == "/inputs/plan/tp");
  CHECK(compare_runs(predicted, load_measured_run(kData + "measured_slow.json"), 0.15).over_tolerance());
}

TEST_CASE("a model's source text is not a difference between runs") {
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(kData + "measured_close.json"));
  doc["inputs"]["model"]["source"] = "my own copy of gpt-tiny";
  const std::string path = (std::filesystem::temp_directory_path() / "trainsim_compare_source.json").string();
  std::ofstream(path) << doc.dump();
  const ComparedRun predicted = load_predicted_run(kData + "prediction.json");
  CHECK(compare_runs(predicted, load_measured_run(path), 0.15).differences.empty());
  std::filesystem::remove(path);
}

TEST_CASE("a measurement written as JSON reads back the same") {
  const Measurement m = sample_measurement();
  ProblemList problems;
  const Measurement back = read_measurement(written(m), "m.json", problems);
  REQUIRE(problems.empty());
  CHECK(back.warmup_iterations == 1);
  CHECK(back.ranks == 4);
  CHECK(back.backend == "cpu");
  CHECK(back.iteration_time_s == m.iteration_time_s);
  CHECK(back.memory_peak_gib == m.memory_peak_gib);
  CHECK(back.breakdown.forward_s == m.breakdown.forward_s);
  CHECK(back.breakdown.backward_s == m.breakdown.backward_s);
  CHECK(back.breakdown.optimizer_s == m.breakdown.optimizer_s);
  REQUIRE(back.iterations.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const IterationRecord& a = m.iterations[i];
    const IterationRecord& b = back.iterations[i];
    CHECK(b.iteration == a.iteration);
    CHECK(b.time_s == a.time_s);
    CHECK((b.phases.forward_s == a.phases.forward_s && b.phases.backward_s == a.phases.backward_s &&
           b.phases.tp_comm_exposed_s == a.phases.tp_comm_exposed_s && b.phases.dp_comm_exposed_s == a.phases.dp_comm_exposed_s &&
           b.phases.pp_comm_exposed_s == a.phases.pp_comm_exposed_s && b.phases.bubble_s == a.phases.bubble_s &&
           b.phases.optimizer_s == a.phases.optimizer_s));
  }
  CHECK(back.iterations[1].loss == m.iterations[1].loss);
  CHECK(std::isnan(back.iterations[2].loss));
}

TEST_CASE("per-op-category times and page faults of a measurement read back the same") {
  Measurement m = sample_measurement();
  m.op_categories.resize(2);
  m.op_categories[0].forward_s[static_cast<size_t>(OpCategory::kGemmQkv)] = 0.125;
  m.op_categories[1].backward_s[static_cast<size_t>(OpCategory::kOther)] = 0.5;
  m.page_faults_per_iteration = 12;
  m.system_s_per_iteration = 0.003;
  m.iterations[1].page_faults = 7;
  ProblemList problems;
  const Measurement back = read_measurement(written(m), "m.json", problems);
  REQUIRE(problems.empty());
  REQUIRE(back.op_categories.size() == 2);
  CHECK(back.op_categories[0].forward_s == m.op_categories[0].forward_s);
  CHECK(back.op_categories[1].backward_s == m.op_categories[1].backward_s);
  CHECK(back.page_faults_per_iteration == 12);
  CHECK(back.system_s_per_iteration == 0.003);
  CHECK(back.iterations[1].page_faults == 7);
}

TEST_CASE("compare lines up op categories stage by stage, skipping those neither side has") {
  ComparedRun predicted = run_with(figures_of(1.0, 0.1)), measured = run_with(figures_of(1.0, 0.1));
  predicted.op_categories.resize(2);
  measured.op_categories.resize(1);  // a file with fewer stages: only the common ones are compared
  predicted.op_categories[0].forward_s[static_cast<size_t>(OpCategory::kGemmFc1)] = 0.9;
  measured.op_categories[0].forward_s[static_cast<size_t>(OpCategory::kGemmFc1)] = 0.6;
  measured.op_categories[0].backward_s[static_cast<size_t>(OpCategory::kGemmFc1)] = 0.4;
  measured.op_categories[0].backward_s[static_cast<size_t>(OpCategory::kOther)] = 0.1;
  const Comparison c = compare_runs(predicted, measured, 0.15);
  REQUIRE(c.op_stages.size() == 1);
  REQUIRE(c.op_stages[0].rows.size() == 2);
  CHECK(c.op_stages[0].rows[0].category == OpCategory::kGemmFc1);
  CHECK(*c.op_stages[0].rows[0].error == Approx(-0.1));
  CHECK(c.op_stages[0].rows[1].category == OpCategory::kOther);
  CHECK(*c.op_stages[0].rows[1].error == Approx(-1.0));
  const std::string table = render_comparison_table(c, predicted, measured);
  CHECK(table.find("per op category, pipeline stage 0") != std::string::npos);
  CHECK(table.find("gemm_fc1") != std::string::npos);
}

TEST_CASE("the measurement breakdown has exactly predict's keys, compute being forward plus backward") {
  const nlohmann::json doc = written(sample_measurement());
  CHECK(doc["schema"] == "trainsim.measurement");
  CHECK(doc["schema_version"] == 1);
  CHECK(doc.contains("context"));
  CHECK(doc["inputs"]["model"]["name"] == "gpt-tiny");
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc["breakdown"].items()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"bubble_s", "compute_s", "dp_comm_exposed_s", "optimizer_s",
                                         "pp_comm_exposed_s", "tp_comm_exposed_s"});
  CHECK(doc["breakdown"]["compute_s"].get<double>() == Approx(0.04));
  CHECK(doc["iterations"][0]["loss"] == 5.5);
  CHECK(doc["iterations"][2]["loss"].is_null());
  CHECK(doc["iterations"][1]["forward_s"].get<double>() == Approx(0.02));
}

TEST_CASE("reading a measurement names the file and the key of a missing or mistyped value") {
  nlohmann::json doc = written(sample_measurement());
  doc["breakdown"].erase("bubble_s");
  doc["iterations"][1]["time_s"] = "0.06";
  doc["ranks"] = 0;
  ProblemList problems;
  read_measurement(doc, "m.json", problems);
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems.items()[0], Catch::Contains("m.json: /ranks: ranks (0) must be >= 1"));
  CHECK_THAT(problems.items()[1], Catch::Contains("m.json: /breakdown/bubble_s: missing required key \"bubble_s\""));
  CHECK_THAT(problems.items()[2], Catch::Contains("m.json: /iterations/1/time_s: expected a number, got a string"));
}

TEST_CASE("a compute_s that is not forward plus backward is refused") {
  nlohmann::json doc = written(sample_measurement());
  doc["breakdown"]["compute_s"] = 0.05;
  ProblemList problems;
  read_measurement(doc, "m.json", problems);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("/breakdown/compute_s: compute_s (0.05) must equal compute_split"));
}

TEST_CASE("a file of another schema is refused at once, naming the schema key") {
  nlohmann::json doc = written(sample_measurement());
  doc["schema"] = "trainsim.prediction";
  ProblemList problems;
  try {
    read_measurement(doc, "m.json", problems);
    FAIL("a prediction is not a measurement");
  } catch (const InputError& e) {
    CHECK_THAT(e.problems()[0], Catch::Contains("m.json: /schema: expected \"trainsim.measurement\", got \"trainsim.prediction\""));
  }
  doc["schema"] = "trainsim.measurement";
  doc["schema_version"] = 2;
  CHECK_THROWS_WITH(read_measurement(doc, "m.json", problems), Catch::Contains("/schema_version: expected 1, got 2"));
}
