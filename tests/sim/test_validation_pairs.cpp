// Pairs of published runs of one plan: which runs pair, in which direction, and their error,
// on hand-made results (no prediction involved).
#include <catch2/catch.hpp>

#include "sim/validation_pairs.hpp"

using namespace trainsim;

namespace {

PublishedRun run(const std::string& id, const std::string& gpu, Precision precision, double measured) {
  PublishedRun r;
  r.id = id;
  r.group = std::string("g");
  r.model.name = std::string("m");
  r.gpu = gpu;
  r.gpus = 8;
  r.plan.dp = 8;
  r.plan.precision = precision;
  r.measured_tokens_per_s_per_gpu = measured;
  return r;
}

RunResult result(const PublishedRun& r, double predicted) {
  RunResult x;
  x.run = &r;
  x.predicted = true;
  x.predicted_tokens_per_s_per_gpu = predicted;
  x.error = predicted / r.measured_tokens_per_s_per_gpu - 1.0;
  return x;
}

}  // namespace

TEST_CASE("same-plan pairs: one thing differs, the ratio is the later side over the earlier") {
  const PublishedRun a = run("a", "h100-sxm-80gb", Precision::kBf16, 1000);
  const PublishedRun b = run("b", "b200-sxm-180gb", Precision::kBf16, 2500);  // first by name: the pair's `from`
  const PublishedRun c = run("c", "h100-sxm-80gb", Precision::kFp8, 1400);
  PublishedRun other_plan = run("d", "b200-sxm-180gb", Precision::kFp8, 3000);
  other_plan.plan.micro_batch = 2;  // a different plan pairs with nothing
  ValidationResult v;
  v.runs = {result(a, 1100), result(b, 2200), result(c, 1650), result(other_plan, 3000)};

  const std::vector<RunPair> gpu = same_plan_pairs(v, PairKind::kGpu);
  REQUIRE(gpu.size() == 1);
  CHECK(gpu[0].from->run->id == "b");
  CHECK(gpu[0].to->run->id == "a");
  CHECK(gpu[0].measured_ratio == Approx(0.4));
  CHECK(gpu[0].predicted_ratio == Approx(0.5));
  CHECK(gpu[0].error() == Approx(0.25));

  const std::vector<RunPair> precision = same_plan_pairs(v, PairKind::kPrecision);
  REQUIRE(precision.size() == 1);
  CHECK(precision[0].from->run->id == "a");  // BF16 first
  CHECK(precision[0].to->run->id == "c");
  CHECK(precision[0].error() == Approx(1.5 / 1.4 - 1.0));

  const PairSummary s = summarize_pairs(gpu);
  CHECK(s.count == 1);
  CHECK(s.within_ten_percent == 0);
  CHECK(s.mean_abs_error == Approx(0.25));
  CHECK(s.max_abs_error == Approx(0.25));
  CHECK(summarize_pairs({}).count == 0);
}

TEST_CASE("same-plan pairs leave out unsupported and out-of-memory runs, and pair each release with each") {
  const PublishedRun a1 = run("a1", "b200-sxm-180gb", Precision::kFp8, 1000);
  const PublishedRun a2 = run("a2", "b200-sxm-180gb", Precision::kFp8, 1100);
  const PublishedRun b1 = run("b1", "gb200-nvl72", Precision::kFp8, 1050);
  PublishedRun oom = run("oom", "gb200-nvl72", Precision::kFp8, 0);
  oom.measured_oom = true;
  ValidationResult v;
  v.runs = {result(a1, 1000), result(a2, 1000), result(b1, 1000)};
  RunResult oom_result;
  oom_result.run = &oom;
  oom_result.predicted = true;  // no error: the run went out of memory
  v.runs.push_back(oom_result);
  RunResult unsupported;
  unsupported.run = &b1;  // not predicted
  v.runs.push_back(unsupported);
  const std::vector<RunPair> gpu = same_plan_pairs(v, PairKind::kGpu);
  REQUIRE(gpu.size() == 2);
  CHECK(gpu[0].from->run->id == "a1");
  CHECK(gpu[1].from->run->id == "a2");
  CHECK(gpu[1].measured_ratio == Approx(1050.0 / 1100.0));
}
