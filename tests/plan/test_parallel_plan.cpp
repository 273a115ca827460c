// Plan validation names every violated constraint with its values.
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "plan/parallel_plan.hpp"

using namespace trainsim;

TEST_CASE("a valid Megatron plan has no problems") {
  ParallelPlan p;
  p.dp = 16;
  p.tp = 8;
  p.pp = 8;
  p.global_batch = 1536;
  CHECK(validate_plan(p, resolve_model("gpt3-175b"), "options").empty());
}

TEST_CASE("every violated constraint is reported at once, with values") {
  ParallelPlan p;
  p.dp = 3;
  p.tp = 3;
  p.pp = 2;
  p.vpp = 2;
  p.micro_batch = 2;
  p.global_batch = 100;
  p.sequence_parallel = false;
  const ProblemList problems = validate_plan(p, resolve_model("llama3-8b"), "options");
  const std::string all = [&] {
    std::string text;
    for (const auto& item : problems.items()) text += item + "\n";
    return text;
  }();
  CHECK_THAT(all, Catch::Contains("tp (3) must divide heads (32) of model \"llama3-8b\""));
  CHECK_THAT(all, Catch::Contains("tp (3) must divide kv_heads (8)"));
  CHECK_THAT(all, Catch::Contains("global_batch (100) must be a multiple of dp x micro_batch (3 x 2 = 6)"));
  CHECK_THAT(all, Catch::Contains("vpp (2) > 1 needs the interleaved schedule"));
}

TEST_CASE("sequence parallelism needs tensor parallelism") {
  ParallelPlan p;
  p.sequence_parallel = true;
  const auto problems = validate_plan(p, resolve_model("gpt2-124m"), "options");
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("sequence parallelism needs tp > 1"));
}

TEST_CASE("context parallelism needs 2 x cp load-balanced chunks, fused attention, and SP-divisible shares") {
  ParallelPlan p;
  p.cp = 2;
  p.global_batch = 1;
  const ModelSpec m = resolve_model("llama3-8b");  // seq 8192
  CHECK(validate_plan(p, m, "options").empty());
  p.cp = 3;
  p.global_batch = 1;
  auto problems = validate_plan(p, m, "options");
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("divisible by 2 x cp (6"));
  p.cp = 2;
  p.attention = AttentionKernel::kUnfused;
  problems = validate_plan(p, m, "options");
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("fused (flash) ring attention"));
  CHECK(validate_plan(p, m, "options", PlanRules::kCpuRuntime).empty());  // the CPU runtime's ring is unfused
  p.cp = 3;
  CHECK_THAT(validate_plan(p, m, "options", PlanRules::kCpuRuntime).items()[0], Catch::Contains("divisible by 2 x cp (6"));
}

TEST_CASE("virtual stages that do not divide the layers: Megatron-Core's embedding and loss accounting, else the earliest take the rest") {
  ModelSpec m = resolve_model("llama3-8b");
  m.layers = 126;  // Llama 3.1 405B's layer count on 8 x 8 virtual stages
  ParallelPlan p;
  p.pp = 8;
  p.vpp = 8;
  p.schedule = Schedule::kInterleaved;
  p.global_batch = 64;
  CHECK(validate_plan(p, m, "options").empty());
  CHECK(layers_of_chunk(m, p, 0, 0).size() == 1);  // the embedding counts as a layer
  CHECK(layers_of_chunk(m, p, 7, 7).size() == 1);  // and the loss
  CHECK(layers_of_chunk(m, p, 3, 2).size() == 2);
  int64_t total = 0;
  for (int64_t s = 0; s < p.pp; ++s) total += layers_on_stage(m, p, s);
  CHECK(total == 126);
  CHECK(layers_on_stage(m, p, 0) == 15);
  CHECK(layers_on_stage(m, p, 3) == 16);
  m.layers = 22;  // Zero Bubble's 1.5B on 8 x 2: 22 + 2 is not a multiple of 16
  p.vpp = 2;
  CHECK(layers_on_stage(m, p, 0) == 3);
  CHECK(layers_on_stage(m, p, 7) == 2);
  m.layers = 12;  // fewer layers than virtual stages
  CHECK_THAT(validate_plan(p, m, "options").items()[0], Catch::Contains("at least one layer each"));
  m.layers = 30;  // 30 + 2 on 4 x 8: the first and the last virtual stage hold the embedding / loss alone
  p.pp = 4;
  p.vpp = 8;
  CHECK(validate_plan(p, m, "options").empty());
  CHECK(layers_of_chunk(m, p, 0, 0).size() == 0);
  CHECK(layers_of_chunk(m, p, 3, 7).size() == 0);
  CHECK(layers_on_stage(m, p, 1) == 8);
}

TEST_CASE("without interleaving, layers + 2 that pp divides leave the first and last stage one layer fewer (Zero Bubble's padding)") {
  ModelSpec m = resolve_model("llama3-8b");
  m.layers = 22;  // Zero Bubble's 1.5B on 8 stages: 2, 3 x 6, 2
  ParallelPlan p;
  p.pp = 8;
  p.global_batch = 8;
  CHECK(layers_on_stage(m, p, 0) == 2);
  CHECK(layers_on_stage(m, p, 1) == 3);
  CHECK(layers_on_stage(m, p, 7) == 2);
  CHECK(layers_of_chunk(m, p, 7, 0).first == 20);
  m.layers = 21;  // 23 does not divide either: the earliest stages take the rest
  CHECK(layers_on_stage(m, p, 0) == 3);
  CHECK(layers_on_stage(m, p, 7) == 2);
}

TEST_CASE("explicit first/last-stage layer counts: the middle stages share the rest evenly") {
  const ModelSpec m = resolve_model("llama3-405b");  // 126 layers
  ParallelPlan p;
  p.pp = 16;
  p.global_batch = 16;
  p.first_stage_layers = 6;  // 120 left over 15 stages
  REQUIRE(validate_plan(p, m, "options").empty());
  CHECK(layers_on_stage(m, p, 0) == 6);
  CHECK(layers_on_stage(m, p, 1) == 8);
  CHECK(layers_on_stage(m, p, 15) == 8);
  p.last_stage_layers = 4;  // 116 over 14 does not split
  CHECK_THAT(validate_plan(p, m, "options").items()[0], Catch::Contains("must split evenly"));
  p.pp = 4;  // 6 + 58 x 2 + 4 with 2 chunks per stage: 58 / 2 splits, then interleave
  p.vpp = 2;
  p.schedule = Schedule::kInterleaved;
  REQUIRE(validate_plan(p, m, "options").empty());
  CHECK(layers_of_chunk(m, p, 0, 0).size() == 3);
  CHECK(layers_of_chunk(m, p, 1, 0).size() == 29);
  CHECK(layers_of_chunk(m, p, 0, 1).first == 3 + 29 + 29 + 2);
  p.first_stage_layers = 5;  // 5 on 2 chunks
  CHECK_FALSE(validate_plan(p, m, "options").empty());
  p.pp = 1;
  p.vpp = 1;
  p.schedule = Schedule::k1F1B;
  CHECK_THAT(validate_plan(p, m, "options").items()[0], Catch::Contains("need pp > 1"));
}
