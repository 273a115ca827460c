// Partial full recomputation (Megatron-Core's --recompute-method / --recompute-num-layers): the
// layer counts against a transcription of checkpointed_forward's loops, a stage's activation
// memory by hand (Korthikanti et al. 2022 Table 2 terms), validation messages and plan JSON.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "model/model_catalog.hpp"
#include "plan/plan_json.hpp"
#include "plan/rank_memory.hpp"
#include "plan/recompute_span.hpp"

using namespace trainsim;

namespace {

ParallelPlan full(RecomputeMethod method, int64_t layers) {
  ParallelPlan p;
  p.recompute = Recompute::kFull;
  p.recompute_method = method;
  p.recompute_layers = layers;
  return p;
}

// megatron/core/recompute.py checkpointed_forward, transcribed: which layer indices of a chunk of
// `layers` run under a checkpoint, and how many checkpoints (chunk_runner calls with
// use_checkpoint) the chunk makes. The FP8 skip of block does not apply (bf16).
struct Reference {
  int64_t recomputed = 0, checkpoints = 0, largest_group = 0;
};
Reference megatron_reference(RecomputeMethod method, int64_t n, int64_t layers) {
  Reference r;
  if (method == RecomputeMethod::kUniform) {
    for (int64_t start = 0; start < layers; start += n) {
      const int64_t end = std::min(start + n, layers);
      ++r.checkpoints;
      r.recomputed += end - start;
      r.largest_group = std::max(r.largest_group, end - start);
    }
    return r;
  }
  for (int64_t i = 0; i < layers; ++i) {
    if (i < n) {  // use_checkpoint = layer_idx >= 0 and layer_idx < recompute_num_layers
      ++r.checkpoints;
      ++r.recomputed;
      r.largest_group = 1;
    }
  }
  return r;
}

// Plan JSON text -> plan, or the InputError's message.
std::string plan_json_problem(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text);
  ProblemList problems;
  JsonObjectReader reader(doc, "p.json", "", problems);
  read_plan(reader, ParallelPlan{}, nullptr);
  return problems.empty() ? "" : problems.items().front();
}

}  // namespace

TEST_CASE("a chunk's recomputed layers, checkpoints and group follow Megatron-Core's checkpointed_forward") {
  for (const RecomputeMethod method : {RecomputeMethod::kUniform, RecomputeMethod::kBlock}) {
    for (int64_t layers = 0; layers <= 12; ++layers) {
      for (int64_t n = method == RecomputeMethod::kUniform ? 1 : 0; n <= 14; ++n) {
        INFO(to_string(method) << " " << n << ", " << layers << " layers");
        const RecomputeSpan span = chunk_recompute_span(full(method, n), layers);
        const Reference ref = megatron_reference(method, n, layers);
        CHECK(span.recomputed_layers == ref.recomputed);
        CHECK(span.checkpointed == ref.checkpoints);
        CHECK(span.group_layers == ref.largest_group);
        CHECK(span.checkpointed + span.whole_layers <= layers);
        CHECK(span.recomputed_layers + span.whole_layers == layers);  // a layer is recomputed or kept whole
      }
    }
  }
}

TEST_CASE("block N counts per model chunk: with interleaving a stage recomputes vpp x N layers") {
  const ModelSpec m = resolve_model("gpt3-6.7b");  // 32 layers
  ParallelPlan p = full(RecomputeMethod::kBlock, 3);
  p.pp = 4;
  p.vpp = 2;
  p.schedule = Schedule::kInterleaved;
  p.global_batch = 8;
  REQUIRE(validate_plan(p, m, "test").empty());
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    const RecomputeSpan span = stage_recompute_span(m, p, stage);
    CHECK(span.recomputed_layers == 2 * 3);  // two chunks of 4 layers, the first 3 of each
    CHECK(span.whole_layers == 2 * 1);
  }
  CHECK(full_recompute_layers(m, p) == 8 * 3);
  p.recompute_layers = 4;
  CHECK(full_recompute_layers(m, p) == m.layers);
  p.recompute = Recompute::kSelective;
  p.recompute_layers = 1;
  p.recompute_method = RecomputeMethod::kUniform;
  CHECK(full_recompute_layers(m, p) == 0);  // FLOP accounting: only full recompute reruns layers
}

TEST_CASE("a stage's activations with block N and uniform N, by hand from Korthikanti's Table 2 terms") {
  // megatron-1.7b: 24 layers, h 2304, a 24, s 2048, dropout; unfused attention, fp16, tp 1, pp 2,
  // 1F1B with 2 micro-batches: stage 0 holds 12 layers and both micro-batches at its peak.
  const ModelSpec m = resolve_model("megatron-1.7b");
  const double s = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double sbh = s * h;
  const double whole = sbh * (34 + 5 * a * s / h);  // Table 2, no parallelism: a layer keeping everything
  const double input = 2 * sbh;                     // full recompute keeps the fp16 layer input
  const double embedding_mask = sbh;                // the embedding's dropout mask (1 byte per value)
  const double in_flight = 2;
  for (const auto& [method, n] : {std::pair<RecomputeMethod, int64_t>{RecomputeMethod::kBlock, 5}, {RecomputeMethod::kUniform, 5}}) {
    INFO(to_string(method));
    ParallelPlan p = full(method, n);
    p.pp = 2;
    p.global_batch = 2;
    p.precision = Precision::kFp16;
    p.attention = AttentionKernel::kUnfused;
    REQUIRE(validate_plan(p, m, "test").empty());
    double expected = 0;
    if (method == RecomputeMethod::kBlock) {
      // 5 layers keep their input, 7 keep everything; one layer rebuilt at a time in the backward.
      expected = in_flight * (5 * input + 7 * whole + embedding_mask) + (whole - input);
    } else {
      // Groups [0,5), [5,10), [10,12): 3 inputs kept; a group of 5 rebuilt at once beside its input.
      expected = in_flight * (3 * input + embedding_mask) + (5 * whole - input);
    }
    CHECK(estimate_rank_memory(m, p).stages[0].memory.activations_bytes == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("block 0 keeps what no recompute keeps, block >= a chunk's layers and uniform 1 what full keeps") {
  const ModelSpec m = resolve_model("gpt3-6.7b");
  ParallelPlan base;
  base.tp = 2;
  base.pp = 4;
  base.global_batch = 16;
  base.sequence_parallel = true;
  ParallelPlan none = base, full_plan = base;
  full_plan.recompute = Recompute::kFull;
  for (int64_t stage = 0; stage < base.pp; ++stage) {
    const auto bytes = [&](const ParallelPlan& p) { return estimate_rank_memory(m, p).stages[static_cast<size_t>(stage)].memory.activations_bytes; };
    ParallelPlan block = full_plan;
    block.recompute_method = RecomputeMethod::kBlock;
    block.recompute_layers = 0;
    CHECK(bytes(block) == bytes(none));
    block.recompute_layers = 8;  // every layer of the stage
    CHECK(bytes(block) == bytes(full_plan));
    block.recompute_layers = 100;
    CHECK(bytes(block) == bytes(full_plan));
    block.recompute_layers = 3;
    CHECK(bytes(block) > bytes(full_plan));
    CHECK(bytes(block) < bytes(none));
  }
}

TEST_CASE("validate_plan names the recompute_layers and recompute_method it refuses") {
  const ModelSpec m = resolve_model("gpt3-6.7b");
  ParallelPlan p = full(RecomputeMethod::kUniform, 0);
  ProblemList problems = validate_plan(p, m, "p.json");
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("p.json: recompute_layers: recompute_layers (0) must be >= 1 with recompute_method uniform"));
  p = full(RecomputeMethod::kBlock, -2);
  REQUIRE(validate_plan(p, m, "p.json").size() == 1);
  CHECK_THAT(validate_plan(p, m, "p.json").items()[0], Catch::Contains("recompute_layers (-2) must be >= 0 with recompute_method block"));
  p = full(RecomputeMethod::kBlock, 0);
  CHECK(validate_plan(p, m, "p.json").empty());
  p.recompute = Recompute::kSelective;
  REQUIRE(validate_plan(p, m, "p.json").size() == 1);
  CHECK_THAT(validate_plan(p, m, "p.json").items()[0],
             Catch::Contains("recompute_method block with recompute_layers 0 chooses the layers of full recomputation, and recompute is selective"));
}

TEST_CASE("plan JSON reads and writes recompute_method and recompute_layers, and refuses bad ones") {
  ParallelPlan p = full(RecomputeMethod::kBlock, 3);
  const nlohmann::ordered_json j = plan_to_json(p);
  CHECK(j.at("recompute_method") == "block");
  CHECK(j.at("recompute_layers") == 3);
  ProblemList problems;
  const nlohmann::json doc = nlohmann::json::parse(j.dump());
  JsonObjectReader reader(doc, "p.json", "", problems);
  const ParallelPlan back = read_plan(reader, ParallelPlan{}, nullptr);
  CHECK(problems.empty());
  CHECK((back.recompute == Recompute::kFull && back.recompute_method == RecomputeMethod::kBlock && back.recompute_layers == 3));
  // The defaults (uniform 1) are not written: plans without partial recompute read as before.
  CHECK_FALSE(plan_to_json(full(RecomputeMethod::kUniform, 1)).contains("recompute_method"));
  CHECK_THAT(plan_json_problem(R"({"recompute": "full", "recompute_method": "block", "recompute_layers": -1})"),
             Catch::Contains("p.json: /recompute_layers: recompute_layers (-1) must be >= 0"));
  CHECK_THAT(plan_json_problem(R"({"recompute": "full", "recompute_layers": 0})"),
             Catch::Contains("recompute_layers (0) must be >= 1 with recompute_method uniform"));
  CHECK_THAT(plan_json_problem(R"({"recompute": "full", "recompute_method": "blocks"})"), Catch::Contains("recompute_method"));
  CHECK(plan_json_problem(R"({"recompute": "full", "recompute_method": "block", "recompute_layers": 0})").empty());
}

TEST_CASE("reports name the partial recomputation") {
  CHECK(describe_recompute(full(RecomputeMethod::kBlock, 2)) == "full (block 2)");
  CHECK(describe_recompute(full(RecomputeMethod::kUniform, 4)) == "full (uniform 4)");
  CHECK(describe_recompute(full(RecomputeMethod::kUniform, 1)) == "full");
  CHECK_FALSE(is_partial_recompute(full(RecomputeMethod::kUniform, 1)));
  CHECK(is_partial_recompute(full(RecomputeMethod::kBlock, 0)));
}

TEST_CASE("every N (torchtitan's selective_ac_option N): the N-th, 2N-th, ... layer of a chunk checkpointed whole") {
  for (int64_t layers = 0; layers <= 12; ++layers) {
    for (int64_t n = 1; n <= 14; ++n) {
      INFO("every " << n << ", " << layers << " layers");
      // torchtitan's _apply_layer_sac: a counter from 1 per wrapped block, checkpointed when count % N == 0.
      int64_t wrapped = 0;
      for (int64_t count = 1; count <= layers; ++count) wrapped += count % n == 0 ? 1 : 0;
      const RecomputeSpan span = chunk_recompute_span(full(RecomputeMethod::kEvery, n), layers);
      CHECK(span.recomputed_layers == wrapped);
      CHECK(span.checkpointed == wrapped);
      CHECK(span.whole_layers == layers - wrapped);
      CHECK(span.group_layers == (wrapped > 0 ? 1 : 0));
    }
  }
  // The same counts as block with as many layers: the same memory and time.
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan every = full(RecomputeMethod::kEvery, 4);
  ParallelPlan block = full(RecomputeMethod::kBlock, 8);  // 32 layers / 4
  CHECK(estimate_rank_memory(m, every).stages[0].memory.activations_bytes ==
        Approx(estimate_rank_memory(m, block).stages[0].memory.activations_bytes));
  CHECK(describe_recompute(every) == "full (every 4)");
  CHECK_THAT(plan_json_problem(R"({"recompute": "full", "recompute_method": "every", "recompute_layers": 0})"),
             Catch::Contains("must be >= 1 with recompute_method every"));
}
