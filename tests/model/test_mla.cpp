// Multi-head latent attention and an MoE model's dense first layers (DeepSeek-V2/V3): parameters,
// FLOPs and activations against DeepSeek's published sizes and by hand from Megatron-Core's
// MLASelfAttention shapes (docs/model-math.md "Multi-head latent attention").
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "model/activation_memory.hpp"
#include "model/flops.hpp"
#include "model/hf_config.hpp"
#include "model/model_catalog.hpp"
#include "model/param_count.hpp"

using namespace trainsim;

namespace {
const std::string kData = TRAINSIM_TEST_DATA;

// DeepSeek-V2-Lite's config.json (deepseek-ai/DeepSeek-V2-Lite): no Q compression (q_lora_rank null).
nlohmann::json v2_lite() {
  return nlohmann::json::parse(R"({
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944, "moe_intermediate_size": 1408,
    "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "q_lora_rank": null, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "vocab_size": 102400, "max_position_embeddings": 163840, "hidden_act": "silu", "tie_word_embeddings": false})");
}
}  // namespace

TEST_CASE("DeepSeek-V3 has 671.0B parameters, 37.6B active per token (report: 671B, 37B, MTP's 14B apart)", "[mla]") {
  const ParamCounts c = count_params(resolve_model("deepseek-v3"));
  // MLA: q_a 7168 x 1536, q_b 1536 x 128*192, kv_a 7168 x 576, kv_b 512 x 128*256, o 16384 x 7168,
  // and the two latent RMSNorms (1536 + 512): 187,107,328 per layer (MHA 128 x 128: 469,762,048).
  CHECK(c.per_layer.attention == 187107328);
  CHECK(c.per_layer.attention_replicated == 7168 * 1536 + 1536 + 7168 * 576 + 512);
  CHECK(c.dense_layer.mlp == 3 * 7168 * 18432);
  // DeepSeek-V3 report (arXiv 2412.19437) §1 and Hugging Face's safetensors index (685B with the
  // 14B multi-token-prediction module): 671B total, 37B activated.
  CHECK(c.total == 671026404352);
  CHECK(c.active_per_token == Approx(37.55e9).epsilon(0.001));
  // Without the dense first layers the count would be 703.8B.
  ModelSpec all_moe = resolve_model("deepseek-v3");
  all_moe.moe->dense_layers = 0;
  CHECK(count_params(all_moe).total == Approx(703.8e9).epsilon(0.001));
}

TEST_CASE("DeepSeek-V3's HF config.json gives the catalog's architecture and numbers", "[mla]") {
  const ModelSpec hf = resolve_model(kData + "/hf/deepseek-v3/config.json", 4096);
  const ModelSpec catalog = resolve_model("deepseek-v3");
  REQUIRE(hf.mla.has_value());
  CHECK(hf.mla->q_lora_rank == 1536);
  CHECK(hf.mla->kv_lora_rank == 512);
  CHECK(hf.qk_head_dim() == 192);
  CHECK(hf.head_dim == 128);
  CHECK(hf.moe->dense_layers == 3);
  CHECK(count_params(hf).total == count_params(catalog).total);
  CHECK(flops_per_token(hf, Recompute::kNone).model == flops_per_token(catalog, Recompute::kNone).model);
}

TEST_CASE("DeepSeek-V2-Lite (no Q compression) has 15.7B parameters", "[mla]") {
  const ModelSpec m = read_hf_config(v2_lite(), "v2-lite/config.json");
  REQUIRE(m.mla.has_value());
  CHECK(m.mla->q_lora_rank == 0);
  // q_proj 2048 x 16*192, kv_a 2048 x 576, kv_b 512 x 16*256, o 2048 x 2048, kv norm 512.
  CHECK(count_params(m).per_layer.attention == 13763072);
  // deepseek-ai/DeepSeek-V2-Lite model card: 15.7B total.
  CHECK(count_params(m).total == 15706484224);
}

TEST_CASE("MLA FLOPs per token: projections by their weights, attention with 192-wide QK and 128-wide V heads", "[mla]") {
  ModelSpec m = resolve_model("deepseek-v3");
  m.mtp_layers = 0;  // the multi-token-prediction depth apart: tests/model/test_mtp.cpp
  const FlopsPerToken f = flops_per_token(m, Recompute::kNone);
  // QK^T 2 s 192 and AV 2 s 128 per head, 128 heads, 61 layers, s = 4096 (no causal discount).
  CHECK(f.forward_attention == Approx(2.0 * 61 * 4096 * 128 * (192 + 128)));
  // Matmul weights: 61 MLA blocks, 58 MoE layers of 9 experts (8 routed + 1 shared) and the router,
  // 3 dense FFNs of 18432, the LM head.
  const double mla = 187105280.0, expert = 3.0 * 7168 * 2048, dense = 3.0 * 7168 * 18432;
  const double matmul = 61 * mla + 58 * (9 * expert + 7168.0 * 256) + 3 * dense + 129280.0 * 7168;
  CHECK(f.forward_matmul == Approx(2.0 * matmul));
  CHECK(f.model == Approx(3.0 * (2.0 * matmul + f.forward_attention)));
  // mla_up_proj re-runs q_b and kv_b in every layer.
  const double up = 1536.0 * 128 * 192 + 512.0 * 128 * 256;
  CHECK(flops_per_token(m, Recompute::kSelective, m.layers, kRecomputeMlaUpProj).hardware == Approx(f.model + 2.0 * 61 * up));
}

TEST_CASE("MLA activations: 192-wide Q and K, the latents, mla_up_proj drops Q, K and V", "[mla]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  ActivationLayout l;
  l.tp = 2;
  l.sequence_parallel = true;
  l.recompute = Recompute::kSelective;
  l.recompute_modules = kRecomputeCoreAttn;
  const double kept = activation_bytes_per_layer(m, l);
  l.recompute_modules = kRecomputeCoreAttn | kRecomputeMlaUpProj;
  const double dropped = activation_bytes_per_layer(m, l);
  // Q and K (128 x 192 each) and V (128 x 128), 2 bytes per value, 4096 tokens, over TP 2.
  CHECK(kept - dropped == Approx(4096.0 * 2 * (2 * 128 * 192 + 128 * 128) / 2));
}

TEST_CASE("MLA shapes that are not one are refused, naming the key", "[mla]") {
  ModelSpec m = resolve_model("deepseek-v3");
  m.kv_heads = 16;
  CHECK_THAT(validate_model(m, "m.json").items().front(), Catch::Contains("kv_heads (16) must equal heads (128)"));
  m = resolve_model("deepseek-v3");
  m.head_dim = 192;
  CHECK_THAT(validate_model(m, "m.json").items().front(), Catch::Contains("head_dim (192) must equal mla/v_head_dim (128)"));
  m = resolve_model("deepseek-v3");
  m.moe->dense_layers = 61;
  CHECK_THAT(validate_model(m, "m.json").items().front(), Catch::Contains("/moe/dense_layers: dense_layers (61) must be from 0 to layers - 1 (60)"));
  m = resolve_model("deepseek-v3");
  m.mla->qk_rope_head_dim = 63;
  CHECK_THAT(validate_model(m, "m.json").items().front(), Catch::Contains("qk_rope_head_dim (63) must be even"));
}
