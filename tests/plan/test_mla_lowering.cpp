// Multi-head latent attention lowered as Megatron-Core's MLASelfAttention runs it under tensor and
// sequence parallelism (plan/mla_lowering.cpp): duplicated down projections on the rank's tokens,
// column-parallel up projections over heads / tp, the SP gather on the latents, the attention
// kernel's 192 / 128 head widths, and the replicated weights in a rank's memory.
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "model/param_count.hpp"
#include "plan/lowering.hpp"
#include "plan/rank_memory.hpp"
#include "op_lookup.hpp"

using namespace trainsim;
using trainsim::test::find_op;

namespace {

// DeepSeek-V3 at TP 2 with SP, EP 8 (Megatron-Bridge's H100 layout, one stage).
ParallelPlan mla_plan(int64_t tp, bool sp) {
  ParallelPlan p;
  p.tp = tp;
  p.dp = 8;
  p.ep = 8;
  p.sequence_parallel = sp;
  p.global_batch = 8;
  p.zero_stage = 1;
  return p;
}

}  // namespace

TEST_CASE("MLA splits the up projections and heads over TP and keeps the down projections whole", "[mla]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  const LayerWork w = lower_iteration(m, mla_plan(2, true)).layer;
  const int64_t tokens = 4096;
  REQUIRE(find_op(w.forward, "qkv_down_q") != nullptr);
  // Down projections: the whole 7168 -> 1536 and 7168 -> 576 on this rank's half of the sequence.
  CHECK(find_op(w.forward, "qkv_down_q")->m == tokens / 2);
  CHECK(find_op(w.forward, "qkv_down_q")->n == 1536);
  CHECK(find_op(w.forward, "qkv_down_kv")->n == 512 + 64);
  CHECK(find_op(w.forward, "qkv_down_kv")->k == 7168);
  // Up projections: 64 of the 128 heads, on every token.
  CHECK(find_op(w.forward, "qkv_up_q")->m == tokens);
  CHECK(find_op(w.forward, "qkv_up_q")->n == 64 * 192);
  CHECK(find_op(w.forward, "qkv_up_q")->k == 1536);
  CHECK(find_op(w.forward, "qkv_up_kv")->n == 64 * (128 + 128));
  CHECK(find_op(w.forward, "qkv_up_kv")->k == 512);
  CHECK(find_op(w.forward, "proj")->k == 64 * 128);
  // The SP all-gather carries the latents (1536 + 512 + 64 values a token), not the 7168-wide input.
  CHECK(find_op(w.forward, "sp_allgather")->bytes == Approx(tokens * (1536.0 + 512 + 64) * 2));
  CHECK(find_op(w.forward, "qkv") == nullptr);
  // The latent norms run on the rank's tokens.
  CHECK(find_op(w.forward, "norm_q")->bytes == Approx(2.0 * (tokens / 2) * 1536 * 2));
}

TEST_CASE("without SP every TP rank runs the down projections on every token", "[mla]") {
  const LayerWork w = lower_iteration(resolve_model("deepseek-v3"), mla_plan(2, false)).layer;
  CHECK(find_op(w.forward, "qkv_down_q")->m == 4096);
  CHECK(find_op(w.forward, "sp_allgather") == nullptr);
  REQUIRE(find_op(w.backward, "tp_allreduce") != nullptr);
  CHECK(find_op(w.backward, "tp_allreduce")->bytes == Approx(4096.0 * (1536 + 512 + 64) * 2));
}

TEST_CASE("MLA's attention kernel has 192-wide QK heads and 128-wide V heads", "[mla]") {
  const LayerWork w = lower_iteration(resolve_model("deepseek-v3"), mla_plan(2, true)).layer;
  const Op* attention = find_op(w.forward, "attention");
  REQUIRE(attention != nullptr);
  CHECK(attention->attention_head_dim == 192);
  CHECK(attention->attention_v_head_dim == 128);
  CHECK(attention->attention_batch_heads == 64);
  // QK^T 2 s^2 192 + AV 2 s^2 128 per head, causal half.
  CHECK(attention->flops() == Approx(2.0 * 64 * 4096.0 * 4096 * (192 + 128) * 0.5));
}

TEST_CASE("mla_up_proj re-runs the up projections and RoPE before the backward", "[mla]") {
  ParallelPlan p = mla_plan(2, true);
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeMlaUpProj;
  const LayerWork w = lower_iteration(resolve_model("deepseek-v3"), p).layer;
  CHECK(find_op(w.recompute, "qkv_up_q") != nullptr);
  CHECK(find_op(w.recompute, "qkv_up_kv") != nullptr);
  CHECK(find_op(w.recompute, "rotary") != nullptr);
  CHECK(find_op(w.recompute, "qkv_down_q") == nullptr);
  CHECK(find_op(w.recompute, "attention") == nullptr);
  ParallelPlan dense;
  dense.recompute = Recompute::kSelective;
  dense.recompute_modules = kRecomputeMlaUpProj;
  CHECK_THAT(validate_plan(dense, resolve_model("llama3-8b"), "plan").items().front(), Catch::Contains("mla_up_proj needs multi-head latent attention"));
}

TEST_CASE("a TP rank holds MLA's down projections whole and its up projections split", "[mla]") {
  ModelSpec m = resolve_model("deepseek-v3");
  m.mtp_layers = 0;         // the one stage would also hold the MTP depth (tests/plan/test_pipeline_layout.cpp)
  m.moe->dense_layers = 0;  // and dense FFNs split over TP (the dense-first-layers case below)
  const ParamCounts c = count_params(m);
  const int64_t one = estimate_rank_memory(m, mla_plan(1, false)).stages[0].params;
  const int64_t two = estimate_rank_memory(m, mla_plan(2, true)).stages[0].params;
  // Halving the split part leaves the replicated part (norms, router, MLA down projections) whole.
  const int64_t replicated = c.per_layer.norms + c.per_layer.router + c.per_layer.attention_replicated;
  const int64_t split_per_layer = c.per_layer.total() - replicated - c.per_layer.mlp;
  // The vocabulary-parallel embedding and LM head halve too.
  const int64_t vocab_half = c.token_embedding - c.token_embedding / 2 + c.lm_head - c.lm_head / 2;
  CHECK(one - two == m.layers * (split_per_layer - split_per_layer / 2) + vocab_half);
}

TEST_CASE("context parallelism's ring passes MLA's 192-wide K and 128-wide V heads", "[mla]") {
  ParallelPlan p = mla_plan(1, false);
  p.cp = 2;
  const LayerWork w = lower_iteration(resolve_model("deepseek-v3"), p).layer;
  const Op* ring = find_op(w.forward, "cp_ring_kv");
  REQUIRE(ring != nullptr);
  // One step of the ring: this rank's 2048 tokens of K (128 x 192) and V (128 x 128), bf16.
  CHECK(ring->bytes == Approx(2048.0 * (128 * 192 + 128 * 128) * 2));
}

TEST_CASE("DeepSeek-V3's three dense first layers are lowered apart: a dense FFN over TP, no router or exchange", "[mla][dense_layers]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  ParallelPlan p = mla_plan(2, true);
  p.pp = 4;
  p.dp = 2;
  p.global_batch = 8;
  const IterationWork work = lower_iteration(m, p);
  REQUIRE_FALSE(work.dense_layer.forward.empty());
  CHECK(find_op(work.dense_layer.forward, "moe_dispatch") == nullptr);
  CHECK(find_op(work.dense_layer.forward, "router") == nullptr);
  CHECK(find_op(work.layer.forward, "moe_dispatch") != nullptr);
  // SwiGLU's fc1 is 2 x 18432 wide, split over TP 2, on every token of the sequence.
  REQUIRE(find_op(work.dense_layer.forward, "fc1") != nullptr);
  CHECK(find_op(work.dense_layer.forward, "fc1")->n == 2 * 18432 / 2);
  // 61 layers over 4 stages (16, 15, 15, 15): the three dense ones open the first stage's chunk.
  CHECK(work.stages[0].chunk_dense_layers == std::vector<int64_t>{3});
  CHECK(work.stages[1].chunk_dense_layers == std::vector<int64_t>{0});
  // The first stage holds three dense FFNs (3 x 7168 x 18432 over TP 2) where MoE layers would
  // hold their local experts (256 / EP 8, whole) and shared expert over TP: its weights differ by that.
  ModelSpec all_moe = m;
  all_moe.moe->dense_layers = 0;
  const int64_t moe_first = estimate_rank_memory(all_moe, p).stages[0].params;
  const int64_t dense_first = work.memory.stages[0].params;
  const int64_t expert = 3 * 7168 * 2048;
  const int64_t per_moe_layer_ffn = 32 * expert + expert / 2 + 7168 * 256;  // local experts, shared expert over TP, router
  CHECK(moe_first - dense_first == 3 * (per_moe_layer_ffn - 3 * 7168 * 18432 / 2));
  CHECK(work.memory.stages[1].params == estimate_rank_memory(all_moe, p).stages[1].params);
}
