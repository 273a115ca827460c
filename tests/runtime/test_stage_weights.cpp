// The initial weights both backends start from (runtime/stage_weights): every rank's TP slices of
// a tensor put back together give the one-rank tensor, each layer's indices point at that layer's
// parameters, an EP rank holds its own experts, and the CPU backend's stage trains exactly these.
#include <catch2/catch.hpp>

#include <string>

#include "model/model_catalog.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/cpu/cpu_model.hpp"
#include "runtime/stage_weights.hpp"
#include "runtime/tp_split.hpp"

using namespace trainsim;
using namespace trainsim::runtime;

namespace {

StageLayout whole_model(const ModelSpec& m, int64_t tp = 1, int64_t tp_rank = 0) {
  StageLayout layout;
  layout.chunks = {LayerRange{0, m.layers}};
  layout.embedding = layout.head = true;
  layout.tp = tp;
  layout.tp_rank = tp_rank;
  return layout;
}

}  // namespace

TEST_CASE("each TP rank's initial slices, joined in rank order, are the one-rank tensors") {
  const ModelSpec m = resolve_model("gpt-tiny");
  const StageWeights whole = initial_stage_weights(m, whole_model(m), 7);
  const StageWeights rank0 = initial_stage_weights(m, whole_model(m, 2, 0), 7);
  const StageWeights rank1 = initial_stage_weights(m, whole_model(m, 2, 1), 7);
  REQUIRE(rank0.params.size() == whole.params.size());
  const size_t w_o = whole.layers[1].w_o;  // row-parallel: rows split
  Matrix rows(whole.params[w_o].value.rows(), whole.params[w_o].value.cols());
  rows << rank0.params[rank0.layers[1].w_o].value, rank1.params[rank1.layers[1].w_o].value;
  CHECK(rows == whole.params[w_o].value);
  const size_t qkv = whole.layers[0].w_qkv;  // column-parallel and fused: each rank its [Q | K | V] block
  const std::vector<int64_t> blocks = {m.heads * m.head_dim, m.kv_width(), m.kv_width()};
  CHECK(rank1.params[rank1.layers[0].w_qkv].value == block_slice(whole.params[qkv].value, blocks, 2, 1));
  CHECK(rank1.params[rank1.layers[0].w_qkv].tp_split);
  CHECK_FALSE(rank1.params[rank1.layers[0].ln1_g].tp_split);
}

TEST_CASE("a layer's weight indices name its own parameters, and a tied head is the embedding") {
  const ModelSpec m = resolve_model("gpt-tiny");
  const StageWeights w = initial_stage_weights(m, whole_model(m), 7);
  REQUIRE(static_cast<int64_t>(w.layers.size()) == m.layers);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const std::string prefix = "layer" + std::to_string(l) + ".";
    CHECK(w.params[w.layers[l].w_qkv].name == prefix + "w_qkv");
    CHECK(w.params[w.layers[l].w_2].name == prefix + "w_2");
    CHECK(w.layers[l].router == kNoParam);
  }
  CHECK(w.params[w.wte].name == "wte");
  CHECK((m.tied_embeddings ? w.head == w.wte : w.params[w.head].name == "lm_head"));
}

TEST_CASE("an EP rank's initial experts are its own share, the same tensors as one rank holding all") {
  const ModelSpec m = resolve_model(std::string(TRAINSIM_TEST_DATA) + "/models/moe-tiny.json");
  StageLayout ep1 = whole_model(m), ep2 = whole_model(m);
  ep2.ep = 2;
  ep2.ep_rank = 1;
  const StageWeights all = initial_stage_weights(m, ep1, 5), mine = initial_stage_weights(m, ep2, 5);
  REQUIRE(all.layers[0].experts.size() == 4 * 4);  // w_1, b_1, w_2, b_2 of 4 experts
  REQUIRE(mine.layers[0].experts.size() == 4 * 2);
  const Param& first_mine = mine.params[mine.layers[0].experts[0]];
  CHECK(first_mine.name == "layer0.expert2.w_1");
  CHECK(first_mine.expert);
  CHECK(first_mine.value == all.params[all.layers[0].experts[4 * 2]].value);
  CHECK_FALSE(mine.params[mine.layers[0].shared[0]].expert);
}

TEST_CASE("the CPU backend's stage trains the shared initial weights") {
  const ModelSpec m = resolve_model("gpt-tiny");
  const StageWeights w = initial_stage_weights(m, whole_model(m), 11);
  cpu::StageModel stage(m, whole_model(m), 11);
  REQUIRE(stage.params().size() == w.params.size());
  for (size_t i = 0; i < w.params.size(); ++i) {
    CHECK(stage.params()[i].name == w.params[i].name);
    CHECK(stage.params()[i].value == w.params[i].value);
  }
}

TEST_CASE("the runtime refuses MLA instead of training it as multi-head attention", "[mla]") {
  CHECK_THROWS_WITH(trainsim::runtime::check_runtime_supports(resolve_model("deepseek-v3")), Catch::Contains("multi-head latent attention is not implemented"));
}
