// What each framework can run (plan/framework_support.hpp) agrees with what its exporter writes:
// every plan of a searched space a family accepts exports, and every plan it refuses is one the
// exporter refuses too (for the families with an exporter).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "interop/plan_export.hpp"
#include "model/model_catalog.hpp"
#include "plan/framework_preset.hpp"
#include "plan/framework_support.hpp"
#include "plan/plan_json.hpp"
#include "sim/plan_space.hpp"

using namespace trainsim;

namespace {

// Whether the exporter of `target` writes `p` (false: it throws InputError).
bool exports(const ModelSpec& m, const ParallelPlan& p, ExportTarget target) {
  try {
    export_plan(&m, p, 8, target);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// Every candidate of a Llama 3 8B search on 64 GPUs with the Zero Bubble schedules and per-op
// checkpointing in the space (so each family has something to refuse).
std::vector<ParallelPlan> searched_space(const ModelSpec& m, Recompute selective) {
  PlanSpaceOptions o;
  o.gpus = 64;
  o.global_batch = 256;
  o.max_micro_batch = 4;
  o.selective = selective;
  o.zero_bubble = {Schedule::kZeroBubble1p, Schedule::kZeroBubbleV};
  return list_plans(m, o);
}

}  // namespace

TEST_CASE("a plan Megatron-LM runs is one the megatron export writes, and the other way round") {
  const ModelSpec m = resolve_model("llama3-8b");
  int64_t accepted = 0, refused = 0;
  for (const ParallelPlan& p : searched_space(m, Recompute::kSelective)) {
    const bool runs = not_runnable(FrameworkFamily::kMegatron, p) == nullptr;
    INFO(plan_to_json(p).dump());
    CHECK(runs == exports(m, p, ExportTarget::kMegatron));
    (runs ? accepted : refused) += 1;
  }
  CHECK(accepted > 1000);
  CHECK(refused > 100);  // ZeRO-2 and the Zero Bubble schedules
}

TEST_CASE("a plan torchtitan runs is one the torchtitan export writes") {
  const ModelSpec m = resolve_model("llama3-8b");
  int64_t accepted = 0, refused = 0;
  for (const ParallelPlan& p : searched_space(m, Recompute::kSelectiveOp)) {
    if (not_runnable(FrameworkFamily::kTorchtitan, p) != nullptr) {
      ++refused;
      CHECK_FALSE(exports(m, p, ExportTarget::kTorchtitan));
      continue;
    }
    ++accepted;
    INFO(plan_to_json(p).dump());
    CHECK(exports(m, p, ExportTarget::kTorchtitan));
  }
  CHECK(accepted > 100);
  CHECK(refused > 1000);
}

TEST_CASE("a plan a DeepSpeed config runs is one the deepspeed export writes") {
  const ModelSpec m = resolve_model("llama3-8b");
  for (const ParallelPlan& p : searched_space(m, Recompute::kSelective)) {
    if (not_runnable(FrameworkFamily::kDeepSpeed, p) != nullptr) continue;
    INFO(plan_to_json(p).dump());
    CHECK(p.tp * p.pp * p.cp == 1);
    CHECK(exports(m, p, ExportTarget::kDeepSpeed));
  }
}

TEST_CASE("framework families: names, and the reasons of refused settings") {
  CHECK(framework_family("nemo") == FrameworkFamily::kMegatron);
  CHECK(framework_family("torchrun") == FrameworkFamily::kMegatron);
  CHECK(framework_family("megatron-deepspeed") == FrameworkFamily::kMegatronDeepSpeed);
  CHECK(framework_family("llm-foundry") == FrameworkFamily::kLlmFoundry);
  CHECK_FALSE(framework_family("").has_value());
  CHECK_FALSE(framework_family("generic").has_value());
  ParallelPlan p;
  p.dp = 8;
  CHECK(not_runnable(FrameworkFamily::kMegatron, p) == nullptr);
  p.zero_stage = 2;
  CHECK(std::string(not_runnable(FrameworkFamily::kMegatron, p)) == "Megatron-LM has no ZeRO-2");
  CHECK(not_runnable(FrameworkFamily::kLlmFoundry, p) == nullptr);  // SHARD_GRAD_OP
  p.zero_stage = 1;
  CHECK(not_runnable(FrameworkFamily::kLlmFoundry, p) != nullptr);
  p.pp = 2;
  p.zero_stage = 3;
  CHECK(std::string(not_runnable(FrameworkFamily::kMegatronDeepSpeed, p)) == "Megatron-DeepSpeed's pipeline engine takes ZeRO-1 at most");
  CHECK(std::string(not_runnable({FrameworkFamily::kMegatron, FrameworkFamily::kDeepSpeed}, p)) ==
        "a DeepSpeed config cannot express tp or pp");
}

TEST_CASE("GPT-NeoX and Composer: their families, GPT-NeoX's refusals from its training.py, its preset's DeepSpeed defaults") {
  CHECK(framework_family("gpt-neox") == FrameworkFamily::kGptNeox);
  CHECK(framework_family("composer") == FrameworkFamily::kLlmFoundry);
  ParallelPlan p;
  p.dp = 8;
  p.zero_stage = 3;
  CHECK(not_runnable(FrameworkFamily::kGptNeox, p) == nullptr);  // ZeRO-3 alone runs
  p.dp = 4;
  p.tp = 2;
  CHECK(std::string(not_runnable(FrameworkFamily::kGptNeox, p)) == "GPT-NeoX runs ZeRO-2/3 only without pipeline or tensor parallelism");
  p.zero_stage = 1;
  CHECK(not_runnable(FrameworkFamily::kGptNeox, p) == nullptr);
  p.cp = 2;
  CHECK(std::string(not_runnable(FrameworkFamily::kGptNeox, p)) == "GPT-NeoX has no context parallelism");
  p.cp = 1;
  p.precision = Precision::kFp8;
  p.fp8_recipe = Fp8Recipe::kTensorwise;
  CHECK(std::string(not_runnable(FrameworkFamily::kGptNeox, p)) == "GPT-NeoX's FP8 is Transformer Engine's delayed scaling");
  // The preset: DeepSpeed's engine (ZeRO 0, reduction after the backward below stage 3), the
  // unfused core attention.
  ParallelPlan q;
  q.dp = 8;
  q.global_batch = 64;
  apply_framework_preset(framework_preset("gpt-neox"), q, StatedKnobs{{"global_batch"}});
  CHECK(q.zero_stage == 0);
  CHECK_FALSE(q.dp_overlap);
  CHECK(q.attention == AttentionKernel::kUnfused);
  CHECK(framework_preset("composer").zero_stage == 3);
}

TEST_CASE("every uneven pipeline a search proposes exports to Megatron-LM with the embedding and loss accounting") {
  const ModelSpec m = resolve_model("llama3-405b");
  PlanSpaceOptions o;
  o.gpus = 32;
  o.global_batch = 64;
  o.max_micro_batch = 1;
  o.uneven_pipeline = true;
  int64_t accounted = 0;
  for (const ParallelPlan& p : list_plans(m, o)) {
    if (not_runnable(FrameworkFamily::kMegatron, p) != nullptr) continue;
    INFO(plan_to_json(p).dump());
    const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
    const bool uneven = m.layers % (p.pp * p.vpp) != 0;
    CHECK((args.find("--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split") != std::string::npos) == uneven);
    accounted += uneven ? 1 : 0;
  }
  CHECK(accounted > 100);
}
