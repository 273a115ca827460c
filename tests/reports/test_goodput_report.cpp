// Goodput outputs: predict's `goodput` block carries the documented keys (docs/goodput.md §5),
// a run's checkpoint block survives the measurement JSON round trip, and compare lines up
// checkpoint save and load only when both files have them.
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "reports/comparison.hpp"
#include "reports/goodput_report.hpp"
#include "reports/measurement_json.hpp"

using namespace trainsim;

namespace {

GoodputStudy llama3_70b_study(double train_tokens) {
  const ModelSpec model = resolve_model("llama3-70b");
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 4;
  plan.dp = 32;
  plan.global_batch = 1024;
  plan.zero_stage = 1;
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = plan.gpus();
  hw.usd_per_gpu_hour = 2.0;
  GoodputConfig config;
  config.train_tokens = train_tokens;
  return study_goodput(model, plan, hw, 10.0, config);
}

}  // namespace

TEST_CASE("predict's goodput block has the documented keys, the run's figures only with --train-tokens") {
  const nlohmann::ordered_json with = goodput_json(llama3_70b_study(15e12));
  for (const char* key : {"inputs", "checkpoint", "job_mtbf_hours", "checkpoint_interval_s", "checkpoint_interval_optimal_s",
                          "checkpoint_interval_young_s", "downtime_per_failure_s", "lost_work_per_failure_s", "goodput",
                          "goodput_optimal", "train_days_effective", "train_usd_effective", "by_interval", "by_cluster_size"}) {
    CHECK(with.contains(key));
  }
  for (const char* key : {"save_s", "load_s", "stall_s", "written_total_bytes", "held_per_rank_bytes"}) {
    CHECK(with["checkpoint"].contains(key));
  }
  CHECK(with["inputs"]["checkpoint_interval_s"].is_null());
  CHECK(with["by_cluster_size"].size() >= 4);
  const nlohmann::ordered_json without = goodput_json(llama3_70b_study(0));
  CHECK_FALSE(without.contains("train_days_effective"));
}

TEST_CASE("a run's checkpoint save and load survive the measurement JSON round trip") {
  Measurement m;
  m.iteration_time_s = 0.5;
  m.iterations.push_back({});
  m.checkpoint_saves = 4;
  m.checkpoint_save_s = 0.25;
  m.checkpoint_load_s = 0.125;
  m.checkpoint_bytes_per_rank = 1e8;
  const nlohmann::json doc = nlohmann::json::parse(measurement_json(m, {{"model", {{"name", "x"}}}, {"plan", {{"tp", 1}}}}).dump());
  ProblemList problems;
  const Measurement back = read_measurement(doc, "m.json", problems);
  REQUIRE(problems.empty());
  CHECK(back.checkpoint_saves == 4);
  CHECK(back.checkpoint_save_s == 0.25);
  CHECK(back.checkpoint_load_s == 0.125);
  CHECK(back.checkpoint_bytes_per_rank == 1e8);
}

TEST_CASE("compare lines up checkpoint save and load when both files have them") {
  ComparedRun predicted, measured;
  predicted.figures.iteration_time_s = measured.figures.iteration_time_s = 1.0;
  CHECK(compare_runs(predicted, measured, 0.15).figures.size() == 8);
  predicted.checkpoint_save_s = 1.2;
  measured.checkpoint_save_s = 1.0;
  predicted.checkpoint_load_s = 0.5;  // no measured load: no row
  const Comparison c = compare_runs(predicted, measured, 0.15);
  REQUIRE(c.figures.size() == 9);
  CHECK(c.figures.back().key == "checkpoint_save_s");
  CHECK(*c.figures.back().error == Approx(0.2));
}
