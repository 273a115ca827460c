// LoRA fine-tuning (plan lora_rank): frozen base linears without weight gradients, adapters beside
// qkv, proj, fc1 and fc2, and gradients and optimizer states for the adapters alone.
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/rank_memory.hpp"
#include "tests/plan/op_lookup.hpp"

using namespace trainsim;
using trainsim::test::find_op;

namespace {

ParallelPlan lora_plan(int64_t rank) {
  ParallelPlan p;
  p.dp = 8;
  p.tp = 2;
  p.sequence_parallel = true;
  p.global_batch = 16;
  p.zero_stage = 1;
  p.lora_rank = rank;
  return p;
}

}  // namespace

TEST_CASE("LoRA: the frozen linears lose their weight gradients, each target gains an adapter of rank r") {
  const ModelSpec m = resolve_model("llama3-8b");  // h 4096, q 4096, kv 1024, ffn 14336, seq 8192
  const LayerWork full = lower_iteration(m, lora_plan(0)).layer;
  const LayerWork lora = lower_iteration(m, lora_plan(16)).layer;
  for (const char* wgrad : {"qkv_wgrad", "proj_wgrad", "fc1_wgrad", "fc2_wgrad"}) {
    CHECK(find_op(full.backward, wgrad) != nullptr);
    CHECK(find_op(lora.backward, wgrad) == nullptr);
  }
  for (const char* dgrad : {"qkv_dgrad", "proj_dgrad", "fc1_dgrad", "fc2_dgrad"}) CHECK(find_op(lora.backward, dgrad) != nullptr);
  int adapters = 0;
  for (const Op& op : lora.forward) adapters += std::string(op.name) == "lora_a" ? 1 : 0;
  CHECK(adapters == 4);
  // fc1's adapter: A takes fc1's whole input (8192 tokens x 4096) to 16, B gives fc1's split output.
  const Op* fc1 = find_op(lora.forward, "fc1");
  REQUIRE(fc1 != nullptr);
  bool seen = false;
  for (size_t i = 0; i + 1 < lora.forward.size(); ++i) {
    const Op& a = lora.forward[i];
    if (std::string(a.name) != "lora_a" || a.k != fc1->k) continue;
    const Op& b = lora.forward[i + 1];
    if (b.n != fc1->n) continue;
    seen = true;
    CHECK(a.m == fc1->m);
    CHECK(a.n == 16);
    CHECK(b.k == 16);
  }
  CHECK(seen);
  // The adapters' FLOPs are small beside the weight gradients they replace.
  const auto flops = [](const std::vector<Op>& ops) {
    double f = 0;
    for (const Op& op : ops) f += op.kind == OpKind::kGemm ? op.flops() : 0.0;
    return f;
  };
  CHECK(flops(lora.backward) < 0.55 * flops(full.backward));
  CHECK(flops(lora.forward) < 1.01 * flops(full.forward));
  // The recomputed forward (full recompute) runs the adapters again.
  ParallelPlan full_recompute = lora_plan(16);
  full_recompute.recompute = Recompute::kFull;
  CHECK(find_op(lower_iteration(m, full_recompute).layer.recompute, "lora_a") != nullptr);
}

TEST_CASE("LoRA: weights stay whole, gradients and optimizer states are the adapters' alone, the LM head and embedding do not train") {
  const ModelSpec m = resolve_model("llama3-8b");
  const StageMemory full = estimate_rank_memory(m, lora_plan(0)).peak();
  const StageMemory lora = estimate_rank_memory(m, lora_plan(16)).peak();
  const int64_t adapters = lora_params_per_layer(m, lora_plan(16));
  // r x (in + out) per target, the TP-split side halved: qkv, proj, fc1 (SwiGLU: 2 x ffn), fc2.
  CHECK(adapters == 16 * ((4096 + 6144 / 2) + (4096 / 2 + 4096) + (4096 + 28672 / 2) + (14336 / 2 + 4096)));
  CHECK(lora.trainable_params == 32 * adapters);
  CHECK(lora.params == full.params + lora.trainable_params);
  CHECK(lora.memory.weights_bytes > full.memory.weights_bytes);
  CHECK(lora.memory.gradients_bytes == Approx(static_cast<double>(lora.trainable_params) * state_bytes_per_param(lora_plan(16)).gradients));
  CHECK(lora.memory.optimizer_bytes == Approx(static_cast<double>(lora.trainable_params) * 12.0 / 8.0));  // ZeRO-1 over dp 8
  CHECK(lora.memory.optimizer_bytes < 0.01 * full.memory.optimizer_bytes);
  const IterationWork work = lower_iteration(m, lora_plan(16));
  CHECK(work.stages[0].params == Approx(static_cast<double>(lora.trainable_params)));  // what DP reduces and the optimizer steps
  for (const Op& op : work.stages[0].head_backward) CHECK(std::string(op.name) != "lm_head_wgrad");
  for (const Op& op : work.stages[0].embedding_backward) CHECK(std::string(op.name) != "embedding_bwd");
}

TEST_CASE("LoRA is refused where it is not modeled: MoE layers, ZeRO-3") {
  ParallelPlan p = lora_plan(8);
  p.tp = 1;
  p.sequence_parallel = false;
  CHECK(validate_plan(p, resolve_model("llama3-8b"), "plan").empty());
  CHECK_FALSE(validate_plan(p, resolve_model("qwen3-30b-a3b"), "plan").empty());
  p.zero_stage = 3;
  CHECK_FALSE(validate_plan(p, resolve_model("llama3-8b"), "plan").empty());
}
