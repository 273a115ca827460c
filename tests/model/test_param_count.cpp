// Parameter counts against published figures (docs/model-math.md §1). Each expected count is
// the one its authors publish (model cards / Hugging Face parameter counts / papers).
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "model/param_count.hpp"

using namespace trainsim;

namespace {
int64_t total(const char* name) { return count_params(resolve_model(name)).total; }
}  // namespace

TEST_CASE("GPT-2 counts match the Hugging Face checkpoints exactly (tied embeddings)") {
  CHECK(total("gpt2-124m") == 124439808);
  CHECK(total("gpt2-355m") == 354823168);
  CHECK(total("gpt2-774m") == 774030080);
  CHECK(total("gpt2-1.5b") == 1557611200);
}

TEST_CASE("GPT-3 175B has 174.6B parameters (Brown et al. 2020 Table 2.1 shapes)") {
  CHECK(total("gpt3-175b") == Approx(174.6e9).epsilon(0.0005));
  CHECK(total("gpt3-13b") == Approx(13.0e9).epsilon(0.01));  // paper: 13.0B, d_model 5140, d_head 128
}

TEST_CASE("Llama counts match Meta's published figures") {
  CHECK(total("llama3-8b") == 8030261248);
  CHECK(total("llama3-70b") == Approx(70.55e9).epsilon(0.0005));
  CHECK(total("llama3-405b") == Approx(405.8e9).epsilon(0.0005));
  CHECK(total("llama2-7b") == 6738415616);
  CHECK(total("llama2-13b") == 13015864320);
  CHECK(total("llama2-70b") == 68976648192);
}

TEST_CASE("Mixtral 8x7B has 46.7B parameters of which 12.9B are active per token") {
  const ParamCounts c = count_params(resolve_model("mixtral-8x7b"));
  CHECK(c.total == 46702792704);
  CHECK(c.active_per_token == Approx(12.9e9).epsilon(0.005));  // Jiang et al. 2024: 12.9B active
}

TEST_CASE("the Megatron weak-scaling models have the sizes of Narayanan et al. Table 1") {
  // Table 1 names each model by its size in billions, rounded to 0.1B.
  const std::pair<const char*, double> rows[] = {
      {"megatron-1.7b", 1.7},     {"megatron-3.6b", 3.6},     {"megatron-7.5b", 7.5},
      {"megatron-18.4b", 18.4},   {"megatron-39.1b", 39.1},   {"megatron-76.1b", 76.1},
      {"megatron-145.6b", 145.6}, {"megatron-310.1b", 310.1}, {"megatron-529.6b", 529.6},
      {"megatron-1t", 1008.0}};
  for (const auto& [name, billions] : rows) {
    INFO(name);
    CHECK(static_cast<double>(total(name)) / 1e9 == Approx(billions).margin(0.06));
  }
}

TEST_CASE("per-layer counts follow 12h^2 + 13h for a GPT layer") {
  const ModelSpec m = resolve_model("gpt3-175b");
  const int64_t h = m.hidden;
  CHECK(count_params(m).per_layer.total() == 12 * h * h + 13 * h);
}

TEST_CASE("matmul parameters exclude embeddings lookups, norms and biases but include the LM head") {
  const ModelSpec m = resolve_model("gpt3-175b");
  const int64_t h = m.hidden;
  CHECK(count_params(m).matmul_active == m.layers * 12 * h * h + m.vocab * h);
}
