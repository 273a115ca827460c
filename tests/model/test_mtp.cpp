// Multi-token prediction (DeepSeek-V3's MTP module, Megatron-Core's --mtp-num-layers): its
// parameters beside the model's count, its FLOPs per token, where it is read from, and how a
// published run's own FLOP count says whether it ran (docs/model-math.md "Multi-token prediction").
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "model/flops.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "model/param_count.hpp"
#include "sim/published_run_models.hpp"

using namespace trainsim;

namespace {
const std::string kData = TRAINSIM_TEST_DATA;

ModelSpec without_mtp(ModelSpec m) {
  m.mtp_layers = 0;
  return m;
}
}  // namespace

TEST_CASE("DeepSeek-V3's MTP depth: an MoE layer, eh_proj and three norms beside the 671B", "[mtp]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  REQUIRE(m.mtp_layers == 1);
  const ParamCounts c = count_params(m);
  CHECK(c.total == 671026404352);  // the model's stated count leaves MTP out
  // One MoE layer (MLA, 256 routed + 1 shared experts, the router, two norms), eh_proj 14336 x 7168,
  // enorm, hnorm and its final norm.
  CHECK(c.mtp_per_depth == c.per_layer.total() + 2 * 7168 * 7168 + 3 * 7168);
  CHECK(c.mtp == 11610067968);
  // With the shared embedding and LM head counted again it is DeepSeek's "14B MTP module" (13.5B).
  CHECK(static_cast<double>(c.mtp + 2 * c.token_embedding) == Approx(13.46e9).epsilon(0.001));
  CHECK(count_params(without_mtp(m)).mtp == 0);
}

TEST_CASE("MTP FLOPs per token: one more layer with full attention, eh_proj and the LM head again", "[mtp]") {
  const ModelSpec m = resolve_model("deepseek-v3");
  const FlopsPerToken with = flops_per_token(m, Recompute::kNone), without = flops_per_token(without_mtp(m), Recompute::kNone);
  const ParamCounts c = count_params(m);
  // Forward matmul: the MoE layer's active weights (MLA's five projections, 8 + 1 experts, the router),
  // eh_proj and the LM head.
  const double layer = 187105280.0 + 9 * 3.0 * 7168 * 2048 + 7168.0 * 256;
  CHECK(static_cast<double>(c.mtp_matmul_active) == Approx(layer + 2.0 * 7168 * 7168 + 129280.0 * 7168));
  CHECK(with.forward_matmul - without.forward_matmul == Approx(2.0 * static_cast<double>(c.mtp_matmul_active)));
  CHECK(with.forward_attention - without.forward_attention == Approx(2.0 * 4096 * 128 * (192 + 128)));
  CHECK(with.forward_lm_head == Approx(2.0 * without.forward_lm_head));
  // Megatron's count (causal attention halved): 250.4 G per token without, 260.6 G with: what
  // Megatron-Bridge's tables report (249.1-249.6 for their "w/o MTP" rows, 259.6-260.6 for the rest).
  CHECK(without.model - 1.5 * without.forward_attention == Approx(250.4e9).epsilon(0.001));
  CHECK(with.model - 1.5 * with.forward_attention == Approx(260.6e9).epsilon(0.001));
}

TEST_CASE("mtp_layers is read from model JSON and Hugging Face's num_nextn_predict_layers, written back, and checked", "[mtp]") {
  CHECK(resolve_model(kData + "/hf/deepseek-v3/config.json", 4096).mtp_layers == 1);
  const ModelSpec catalog = resolve_model("deepseek-v3");
  CHECK(model_to_json(catalog)["mtp_layers"] == 1);
  CHECK_FALSE(model_to_json(resolve_model("llama3-8b")).contains("mtp_layers"));
  ModelSpec bad = catalog;
  bad.mtp_layers = -1;
  const ProblemList problems = validate_model(bad, "m.json");
  REQUIRE(problems.items().size() == 1);
  CHECK(problems.items().front().find("/mtp_layers: mtp_layers (-1) must be from 0") != std::string::npos);
}

TEST_CASE("a published run's MTP depth is the one its own FLOP count states, else the recipe's", "[mtp]") {
  const ModelSpec& known = resolve_model("deepseek-v3");
  nlohmann::json run = {{"model", {{"seq_len", 4096}, {"vocab", 129280}}},
                        {"measured", {{"tokens_per_s_per_gpu", 3139}, {"model_tflops_per_gpu", 782}}}};
  // Megatron-Bridge's 25.11 GB200 "DeepSeekV3 (w/o MTP)" row: 249.1 G per token.
  std::optional<MtpChoice> choice = run_mtp_layers(known, "megatron-bridge", run);
  REQUIRE(choice.has_value());
  CHECK(choice->depths == 0);
  CHECK(choice->why.find("249.1 G FLOPs per token") != std::string::npos);
  // The 26.06.01 GB200 row: 4,928 tokens/s at 1,280 TFLOP/s, 259.7 G per token.
  run["measured"] = {{"tokens_per_s_per_gpu", 4928}, {"model_tflops_per_gpu", 1280}};
  CHECK(run_mtp_layers(known, "megatron-bridge", run)->depths == 1);
  // No FLOP count: Megatron-family recipes keep the model's depth; other frameworks have none.
  run["measured"] = {{"tokens_per_s_per_gpu", 4928}};
  CHECK(run_mtp_layers(known, "megatron-bridge", run)->depths == 1);
  CHECK(run_mtp_layers(known, "torchtitan", run)->depths == 0);
  // A count that is neither (a different FLOP formula): the recipe's default, not a guess.
  run["measured"] = {{"tokens_per_s_per_gpu", 1000}, {"model_tflops_per_gpu", 400}};
  CHECK(run_mtp_layers(known, "megatron-bridge", run)->depths == 1);
  CHECK_FALSE(run_mtp_layers(resolve_model("llama3-8b"), "megatron-bridge", run).has_value());
}
