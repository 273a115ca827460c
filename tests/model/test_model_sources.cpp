// The same model gives the same numbers whichever way it comes in: catalog, our JSON, or a
// Hugging Face config.json. HF configs of models outside the catalog match their published counts.
#include <catch2/catch.hpp>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "model/flops.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "model/param_count.hpp"

using namespace trainsim;

namespace {
const std::string kData = TRAINSIM_TEST_DATA;

void require_same_numbers(const ModelSpec& a, const ModelSpec& b) {
  const ParamCounts ca = count_params(a), cb = count_params(b);
  CHECK(ca.total == cb.total);
  CHECK(ca.matmul_active == cb.matmul_active);
  CHECK(ca.per_layer.total() == cb.per_layer.total());
  CHECK(flops_per_token(a, Recompute::kSelective).hardware == flops_per_token(b, Recompute::kSelective).hardware);
  CHECK(a.seq_len == b.seq_len);
}
}  // namespace

TEST_CASE("Llama-3-8B from the catalog, our JSON and its HF config.json give identical numbers") {
  const ModelSpec catalog = resolve_model("llama3-8b");
  require_same_numbers(catalog, resolve_model(kData + "/models/llama3-8b.json"));
  require_same_numbers(catalog, resolve_model(kData + "/hf/llama3-8b/config.json"));
}

TEST_CASE("GPT-2 and Mixtral HF configs match their catalog entries") {
  require_same_numbers(resolve_model("gpt2-124m"), resolve_model(kData + "/hf/gpt2/config.json"));
  require_same_numbers(resolve_model("mixtral-8x7b"), resolve_model(kData + "/hf/mixtral-8x7b/config.json"));
}

TEST_CASE("HF configs of models outside the catalog give their published parameter counts") {
  // Qwen2-0.5B: 494,032,768 (Hugging Face model card; Q/K/V biases, tied embeddings).
  CHECK(count_params(resolve_model(kData + "/hf/qwen2-0.5b/config.json")).total == 494032768);
  // GPT-NeoX-20B: 20,554,567,680 (Black et al. 2022; untied, LayerNorm and linear biases).
  CHECK(count_params(resolve_model(kData + "/hf/gpt-neox-20b/config.json")).total == 20554567680);
}

TEST_CASE("a published-run model block loads, and its stated size is kept for reference") {
  const ModelSpec m = resolve_model(kData + "/models/published-run-block.json");
  REQUIRE(m.params_b_stated.has_value());
  CHECK(*m.params_b_stated == 175.0);
  CHECK(count_params(m).total == Approx(175e9).epsilon(0.005));
}

TEST_CASE("a sequence-length override is applied and validated") {
  CHECK(resolve_model("llama3-8b", 4096).seq_len == 4096);
  CHECK_THROWS_WITH(resolve_model("gpt2-124m", 2048), Catch::Contains("exceeds the learned position table"));
}

TEST_CASE("an unknown built-in name suggests the nearest one") {
  CHECK_THROWS_WITH(resolve_model("llama3-8"), Catch::Contains("did you mean \"llama3-8b\""));
}

TEST_CASE("a model written out reads back to the same spec") {
  for (const auto& m : builtin_models()) {
    INFO(m.name);
    const std::string path = "roundtrip-" + std::to_string(&m - &builtin_models()[0]) + ".json";
    {
      std::FILE* f = std::fopen(path.c_str(), "w");
      REQUIRE(f != nullptr);
      const std::string text = model_to_json(m).dump(1);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
    require_same_numbers(m, load_model_file(path));
    std::remove(path.c_str());
  }
}
