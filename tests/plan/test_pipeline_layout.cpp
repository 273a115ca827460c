// An explicit pipeline layout (Megatron-Core's --pipeline-model-parallel-layout: layers per virtual
// stage) and the multi-token-prediction depths the last virtual stage runs beside its layers: the
// split, its checks, the plan JSON and export, the lowering and a rank's memory.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "model/param_count.hpp"
#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/plan_json.hpp"
#include "plan/rank_memory.hpp"
#include "op_lookup.hpp"

using namespace trainsim;
using trainsim::test::find_op;

namespace {

// Megatron-Bridge's DeepSeek-V3 on 256 B200: PP16, EP8, the recipe's layout (embedding + 4 layers
// first, 4 in each middle stage, 1 layer + MTP + loss last).
ParallelPlan bridge_plan() {
  ParallelPlan p;
  p.dp = 16;
  p.pp = 16;
  p.ep = 8;
  p.global_batch = 2048;
  p.zero_stage = 1;
  p.pipeline_layout = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1};
  return p;
}

std::string all_problems(const ProblemList& problems) {
  std::string text;
  for (const auto& item : problems.items()) text += item + "\n";
  return text;
}

}  // namespace

TEST_CASE("a pipeline layout places each virtual stage's layers as given", "[pipeline_layout]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  ParallelPlan p = bridge_plan();
  REQUIRE(validate_plan(p, m, "options").empty());
  CHECK(virtual_stage_layers(m, p) == p.pipeline_layout);
  CHECK(layers_on_stage(m, p, 15) == 1);
  CHECK(describe_stage_layers(m, p) == "4 x 15, 1 (+ 1 multi-token-prediction layer on the last)");
  // Interleaved: virtual stages in model order, stage 3 holds virtual stages 3, 7, 11 and 15.
  p.pp = 4;
  p.vpp = 4;
  p.dp = 64;
  p.schedule = Schedule::kInterleaved;
  REQUIRE(validate_plan(p, m, "options").empty());
  CHECK(layers_on_stage(m, p, 3) == 13);
  CHECK(layers_on_stage(m, p, 0) == 16);
}

TEST_CASE("a pipeline layout that does not fit the plan or the model is refused, naming both", "[pipeline_layout]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  ParallelPlan p = bridge_plan();
  p.pipeline_layout.pop_back();
  CHECK_THAT(all_problems(validate_plan(p, m, "plan.json")),
             Catch::Contains("pipeline_layout has 15 stages; pp x vpp (16 x 1) needs 16, one per virtual stage in model order"));
  p = bridge_plan();
  p.pipeline_layout.back() = 2;
  CHECK_THAT(all_problems(validate_plan(p, m, "plan.json")),
             Catch::Contains("pipeline_layout places 62 layers, not the 61 of model \"deepseek-v3\""));
  p = bridge_plan();
  p.first_stage_layers = 4;
  CHECK_THAT(all_problems(validate_plan(p, m, "plan.json")), Catch::Contains("give either pipeline_layout or first/last_stage_layers"));
}

TEST_CASE("the layout reads and writes as plan JSON and --pipeline-layout text, and exports as Megatron's string", "[pipeline_layout]") {
  const ParallelPlan p = bridge_plan();
  const nlohmann::ordered_json j = plan_to_json(p);
  REQUIRE(j.contains("pipeline_layout"));
  CHECK(j["pipeline_layout"].size() == 16);
  CHECK(parse_pipeline_layout("4,4,1") == std::vector<int64_t>{4, 4, 1});
  CHECK_THROWS_WITH(parse_pipeline_layout("4,x,1"), Catch::Contains("\"x\" is not a layer count"));
  const ModelSpec m = resolve_model("deepseek-v3");
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--pipeline-model-parallel-layout 'Et*4|t*4|"));
  CHECK_THAT(args, Catch::Contains("|tmL'"));
  CHECK_THAT(args, Catch::Contains("--mtp-num-layers 1"));
}

TEST_CASE("the last virtual stage runs the MTP depth's layer, eh_proj and a second LM head", "[pipeline_layout][mtp]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  ModelSpec plain = m;
  plain.mtp_layers = 0;
  const IterationWork with = lower_iteration(m, bridge_plan()), without = lower_iteration(plain, bridge_plan());
  const StageWork& last = with.stages.back();
  CHECK(last.chunk_layers == std::vector<int64_t>{2});  // its 1 layer and the MTP depth's
  CHECK(without.stages.back().chunk_layers == std::vector<int64_t>{1});
  CHECK(with.stages.front().chunk_layers == without.stages.front().chunk_layers);
  const Op* eh_proj = find_op(last.head_forward, "mtp_eh_proj");
  REQUIRE(eh_proj != nullptr);
  CHECK(eh_proj->m == 4096);
  CHECK(eh_proj->n == 7168);
  CHECK(eh_proj->k == 2 * 7168);
  int heads = 0;
  for (const Op& op : last.head_forward) heads += std::string(op.name) == "lm_head";
  CHECK(heads == 2);
  CHECK(find_op(without.stages.back().head_forward, "mtp_eh_proj") == nullptr);
  // Memory: the last stage holds the MTP layer, eh_proj and the norms, and the word embedding the
  // depth looks the shifted tokens up in (DeepSeek-V3's is untied); the first stage is unchanged.
  const RankMemory& mem = with.memory;
  const int64_t extra = mem.stages.back().params - without.memory.stages.back().params;
  const ParamCounts c = count_params(m);
  CHECK(mem.stages.back().layers == 2);
  CHECK(extra > 2 * 7168 * 7168 + c.token_embedding);
  CHECK(mem.stages.front().params == without.memory.stages.front().params);
  CHECK(mem.stages.back().memory.activations_bytes > without.memory.stages.back().memory.activations_bytes);
}

TEST_CASE("a Megatron layout string imports back to the layout, repeats and MTP depths read", "[pipeline_layout]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  ParallelPlan p = bridge_plan();
  p.pp = 4;
  p.vpp = 4;
  p.dp = 64;
  p.schedule = Schedule::kInterleaved;
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  const ImportedJob back = import_megatron(args, "export", m, p.gpus());
  CHECK(back.plan.pipeline_layout == p.pipeline_layout);
  CHECK(back.plan.vpp == 4);
  CHECK(back.unknown.empty());
  // Megatron-Bridge's own spelling, with a repeated group; its MTP depth must be the model's.
  const ImportedJob bridge = import_megatron("--pipeline-model-parallel-size 16 --pipeline-model-parallel-layout 'Et*4|(t*4|)*14tmL' "
                                             "--expert-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 2048",
                                             "run.sh", m, 256);
  CHECK(bridge.plan.pipeline_layout == bridge_plan().pipeline_layout);
  ModelSpec plain = m;
  plain.mtp_layers = 0;
  CHECK_THROWS_WITH(import_megatron("--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*30|t*31mL'", "run.sh", plain, 2),
                    Catch::Contains("places 1 MTP depths; model \"deepseek-v3\" has 0"));
  CHECK_THROWS_WITH(import_megatron("--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*30|(t*31mL'", "run.sh", m, 2),
                    Catch::Contains("a '(' without its ')'"));
}
