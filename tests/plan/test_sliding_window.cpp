// Sliding-window attention (Mistral, Gemma 2, GPT-OSS): the band's share of a causal kernel's
// query-key pairs, the layer's heads split between a windowed and a full kernel in the model's
// proportion, the FLOP count, the Hugging Face reader, the model JSON keys and the refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/op_category.hpp"
#include "common/json_reader.hpp"
#include "model/flops.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "model/param_count.hpp"
#include "op_lookup.hpp"
#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"

using namespace trainsim;
using trainsim::test::find_op;

namespace {

ParallelPlan oss_plan() {
  ParallelPlan p;
  p.ep = 8;
  p.dp = 8;
  p.global_batch = 8;
  return p;
}

double attention_flops(const std::vector<Op>& ops) {
  double f = 0;
  for (const Op& op : ops) f += op.kind == OpKind::kAttention ? op.flops() : 0.0;
  return f;
}

}  // namespace

TEST_CASE("a window keeps s w - w^2/2 of a causal kernel's s^2/2 query-key pairs") {
  Op op;
  op.kind = OpKind::kAttention;
  op.attention_batch_heads = 1;
  op.attention_seq = 4096;
  op.attention_head_dim = 64;
  CHECK(op.attention_window_share() == 1.0);
  op.attention_window = 128;
  CHECK(op.attention_window_share() == Approx((4096.0 * 128 - 128.0 * 128 / 2) / (4096.0 * 4096 / 2)));  // 0.0615
  const double windowed = op.flops();
  op.attention_window = 4096;  // a window as long as the sequence is no window
  CHECK(op.attention_window_share() == 1.0);
  CHECK(windowed == Approx(op.flops() * 0.06152).epsilon(1e-3));
}

TEST_CASE("GPT-OSS: every other layer windowed, so a layer's heads split half windowed, half full") {
  const ModelSpec m = resolve_model("gpt-oss-120b");
  REQUIRE(m.windowed_layers() == 18);
  const LayerWork w = lower_iteration(m, oss_plan()).layer;
  const Op* full = find_op(w.forward, "attention");
  const Op* band = find_op(w.forward, "attention_window");
  REQUIRE(full != nullptr);
  REQUIRE(band != nullptr);
  CHECK(full->attention_batch_heads == 32);
  CHECK(band->attention_batch_heads == 32);
  CHECK(band->attention_window == 128);
  CHECK(find_op(w.backward, "attention_window_bwd") != nullptr);
  // The layer's attention is the mean of a full layer's and a windowed one's.
  ModelSpec dense = m;
  dense.sliding_window = 0;
  dense.sliding_window_layers = 0;
  const double all_full = attention_flops(lower_iteration(dense, oss_plan()).layer.forward);
  CHECK(attention_flops(w.forward) == Approx(all_full * (1.0 + band->attention_window_share()) / 2));
  // Model FLOPs: a windowed layer's query against 128 keys instead of 4096.
  const double h = 64.0 * 64;
  CHECK(flops_per_token(dense, Recompute::kNone).forward_attention - flops_per_token(m, Recompute::kNone).forward_attention ==
        Approx(4.0 * 18 * (4096 - 128) * h));
}

TEST_CASE("GPT-OSS's Hugging Face config reads as the catalog entry: head_dim 64, biases, 18 windowed layers, 116.8B") {
  const ModelSpec hf = resolve_model(std::string(TRAINSIM_TEST_DATA) + "/hf/gpt-oss-120b/config.json");
  const ModelSpec catalog = resolve_model("gpt-oss-120b");
  REQUIRE(hf.moe);
  CHECK(hf.moe->experts == 128);
  CHECK(hf.moe->top_k == 4);
  CHECK(hf.head_dim == 64);
  CHECK(hf.linear_bias);
  CHECK(hf.sliding_window == 128);
  CHECK(hf.sliding_window_layers == 18);
  CHECK(hf.glu_clamp == 7.0);  // swiglu_limit
  CHECK(hf.rope_attention_factor == Approx(0.1 * std::log(32.0) + 1.0));  // YaRN of factor 32, no mscale stated
  CHECK(catalog.rope_attention_factor == Approx(hf.rope_attention_factor));
  CHECK(hf.glu_clamp == catalog.glu_clamp);
  CHECK(count_params(hf).total == count_params(catalog).total);
  CHECK(count_params(catalog).total == Approx(116.83e9).epsilon(1e-3));  // the model card's 116.83B
}

TEST_CASE("model JSON: sliding_window round-trips, its layer count needs a window and at most every layer") {
  ModelSpec m = resolve_model("gpt-oss-20b");
  const nlohmann::json j = model_to_json(m);
  ProblemList problems;
  JsonObjectReader r(j, "m.json", "", problems);
  const ModelSpec back = read_model(r);
  CHECK(problems.empty());
  CHECK(back.sliding_window == 128);
  CHECK(back.sliding_window_layers == 12);

  nlohmann::json bad = j;
  bad.erase("sliding_window");
  ProblemList p2;
  JsonObjectReader r2(bad, "m.json", "", p2);
  read_model(r2);
  REQUIRE(!p2.empty());
  CHECK_THAT(p2.items()[0], Catch::Contains("sliding_window_layers") && Catch::Contains("without sliding_window"));

  m.sliding_window_layers = 25;
  REQUIRE(!validate_model(m, "m.json").empty());
  CHECK_THAT(validate_model(m, "m.json").items()[0], Catch::Contains("must be from 0 to layers (24)"));
}

TEST_CASE("model JSON: glu_clamp round-trips, and a negative one or one on an ungated FFN is refused with its key") {
  ModelSpec m = resolve_model("gpt-oss-20b");
  const nlohmann::json j = model_to_json(m);
  CHECK(j.at("glu_clamp") == 7.0);
  ProblemList problems;
  JsonObjectReader r(j, "m.json", "", problems);
  CHECK(read_model(r).glu_clamp == 7.0);
  CHECK(problems.empty());
  CHECK_FALSE(model_to_json(resolve_model("llama3-8b")).contains("glu_clamp"));  // none: left out

  m.glu_clamp = -1;
  REQUIRE(!validate_model(m, "m.json").empty());
  CHECK_THAT(validate_model(m, "m.json").items()[0], Catch::Contains("/glu_clamp") && Catch::Contains(">= 0"));
  m.glu_clamp = 7;
  m.ffn_kind = FfnKind::kGelu;
  REQUIRE(!validate_model(m, "m.json").empty());
  CHECK_THAT(validate_model(m, "m.json").items()[0], Catch::Contains("/glu_clamp") && Catch::Contains("gated FFN"));
}

TEST_CASE("YaRN's attention factor: Megatron-Core's unfused RoPE on Q and K, 10 bytes per byte forward, 17 backward") {
  const ModelSpec m = resolve_model("gpt-oss-120b");
  ParallelPlan p = oss_plan();
  const double rotated = 4096.0 * (64 * 64 + 8 * 64) * 2;  // Q and K of one micro-batch, bf16
  const LayerWork w = lower_iteration(m, p).layer;
  bool forward = false, backward = false;
  for (const Op& op : w.forward) {
    CHECK(std::string(op.name) != "rotary");
    if (std::string(op.name) != "rotary_unfused") continue;
    forward = true;
    CHECK(op.bytes == Approx(10 * rotated));
    CHECK(op.eager_ops == 30);
    CHECK(op_category_of(op.name) == OpCategory::kRotary);
  }
  for (const Op& op : w.backward) {
    if (std::string(op.name) != "rotary_unfused_bwd") continue;
    backward = true;
    CHECK(op.bytes == Approx(17 * rotated));
    CHECK(op.eager_ops == 18);
    CHECK(op.backward);
  }
  CHECK((forward && backward));
  // Plain RoPE (factor 1), or another stack's RoPE: the fused kernel's read and write.
  ModelSpec plain = m;
  plain.rope_attention_factor = 1.0;
  ParallelPlan torch_stack = p;
  torch_stack.host_stack = HostStack::kPytorch;
  for (const auto& [model, plan] : {std::pair{plain, p}, std::pair{m, torch_stack}}) {
    bool fused = false;
    for (const Op& op : lower_iteration(model, plan).layer.forward) {
      if (std::string(op.name) == "rotary") fused = op.bytes == Approx(2 * rotated);
    }
    CHECK(fused);
  }
}

TEST_CASE("YaRN's attention factor from a Hugging Face rope_scaling: stated, mscale's ratio, or 0.1 ln(factor) + 1") {
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(std::string(TRAINSIM_TEST_DATA) + "/hf/gpt-oss-120b/config.json"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "trainsim_yarn_hf";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  const auto read = [&](const nlohmann::json& d) {
    std::ofstream(path) << d.dump();
    return resolve_model(path).rope_attention_factor;
  };
  CHECK(read(doc) == Approx(0.1 * std::log(32.0) + 1.0));
  doc["rope_scaling"]["attention_factor"] = 1.25;
  CHECK(read(doc) == Approx(1.25));
  doc["rope_scaling"].erase("attention_factor");
  doc["rope_scaling"]["mscale"] = 1.0;
  doc["rope_scaling"]["mscale_all_dim"] = 1.0;  // DeepSeek's pair: a ratio of 1
  CHECK(read(doc) == Approx(1.0));
  doc["rope_scaling"]["factor"] = "32";  // not a number: refused, naming the key
  CHECK_THROWS_WITH(read(doc), Catch::Contains("rope_scaling") && Catch::Contains("factor"));
  doc["rope_scaling"] = nullptr;
  CHECK(read(doc) == 1.0);
  // model JSON: round-trips; not positive, or without RoPE, is refused naming the key.
  const ModelSpec m = resolve_model("gpt-oss-20b");
  CHECK(model_to_json(m).at("rope_attention_factor") == Approx(m.rope_attention_factor));
  ModelSpec bad = m;
  bad.rope_attention_factor = 0;
  REQUIRE(!validate_model(bad, "m.json").empty());
  CHECK_THAT(validate_model(bad, "m.json").items()[0], Catch::Contains("/rope_attention_factor") && Catch::Contains("> 0"));
  bad = resolve_model("gpt3-1.3b");  // learned positions
  bad.rope_attention_factor = 1.2;
  REQUIRE(!validate_model(bad, "m.json").empty());
  CHECK_THAT(validate_model(bad, "m.json").items()[0], Catch::Contains("needs position \"rope\""));
}

TEST_CASE("context parallelism's p2p ring refuses a windowed model, all_gather takes it") {
  const ModelSpec m = resolve_model("gpt-oss-120b");
  ParallelPlan p = oss_plan();
  p.cp = 2;
  p.dp = 4;
  p.global_batch = 4;
  REQUIRE(!validate_plan(p, m, "options").empty());
  CHECK_THAT(validate_plan(p, m, "options").items()[0], Catch::Contains("does not run sliding-window attention"));
  p.cp_comm = CpComm::kAllGather;
  CHECK(validate_plan(p, m, "options").empty());
}
