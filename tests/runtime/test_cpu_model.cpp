// The CPU model's backward against finite differences, and its forward against known properties
// (a fresh model's loss is about log(vocab)).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "model/model_catalog.hpp"
#include "runtime/cpu_model.hpp"

using namespace trainsim;
using namespace trainsim::cpu;

namespace {

ModelSpec tiny() {
  ModelSpec m = resolve_model("gpt-tiny");
  m.layers = 2;
  m.hidden = 16;
  m.heads = 2;
  m.kv_heads = 2;
  m.head_dim = 8;
  m.ffn_hidden = 32;
  m.vocab = 11;
  m.seq_len = 5;
  m.max_positions = 5;
  return m;
}

MicroBatchState batch_of(int64_t sequences, const ModelSpec& m, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  MicroBatchState s;
  s.batch = sequences;
  for (int64_t i = 0; i < sequences * m.seq_len; ++i) {
    s.tokens.push_back(static_cast<int32_t>(rng() % m.vocab));
    s.targets.push_back(static_cast<int32_t>(rng() % m.vocab));
  }
  return s;
}

double loss_of(StageModel& model, const ModelSpec& m) {
  SingleRankGroup tp;
  MicroBatchState s = batch_of(2, m, 7);
  double loss = 0;
  model.forward(Matrix(), s, tp, 1.0f, loss);
  return loss;
}

}  // namespace

ModelSpec tiny_swiglu_gqa() {
  ModelSpec m = tiny();
  m.heads = 4;
  m.head_dim = 4;
  m.kv_heads = 2;  // two query heads per kv head
  m.ffn_kind = FfnKind::kSwiglu;
  return m;
}

void check_gradients_against_finite_differences(const ModelSpec& m) {
  const StageLayout layout = stage_layout(m, ParallelPlan{}, 0, 0);  // the whole model on one rank
  StageModel model(m, layout, 1234);
  SingleRankGroup tp;
  MicroBatchState s = batch_of(2, m, 7);
  double loss = 0;
  model.forward(Matrix(), s, tp, 1.0f, loss);
  model.backward(Matrix(), s, tp);
  model.finish_gradients(tp);
  std::mt19937 pick(3);
  for (Param& p : model.params()) {
    INFO(p.name);
    for (int trial = 0; trial < 3; ++trial) {
      const Eigen::Index i = static_cast<Eigen::Index>(pick() % static_cast<unsigned>(p.value.size()));
      const float saved = p.value.data()[i];
      const float eps = 3e-3f;
      p.value.data()[i] = saved + eps;
      const double up = loss_of(model, m);
      p.value.data()[i] = saved - eps;
      const double down = loss_of(model, m);
      p.value.data()[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      CHECK(p.grad.data()[i] == Approx(numeric).margin(2e-3).epsilon(0.03));
    }
  }
}

TEST_CASE("every parameter's gradient matches central finite differences") { check_gradients_against_finite_differences(tiny()); }

TEST_CASE("with SwiGLU and grouped-query attention every gradient matches finite differences") {
  check_gradients_against_finite_differences(tiny_swiglu_gqa());
}

TEST_CASE("SwiGLU and GQA change the weights' shapes as the model says") {
  const ModelSpec m = tiny_swiglu_gqa();
  const StageLayout layout = stage_layout(m, ParallelPlan{}, 0, 0);  // the whole model on one rank
  StageModel model(m, layout, 1);
  for (const Param& p : model.params()) {
    if (p.name == "layer0.w_qkv") CHECK(p.value.cols() == (4 + 2 * 2) * 4);
    if (p.name == "layer0.w_1") CHECK(p.value.cols() == 2 * m.ffn_hidden);
    if (p.name == "layer0.w_2") CHECK(p.value.rows() == m.ffn_hidden);
  }
}

TEST_CASE("a fresh model predicts about uniformly: loss per token near log(vocab)") {
  const ModelSpec m = tiny();
  const StageLayout layout = stage_layout(m, ParallelPlan{}, 0, 0);  // the whole model on one rank
  StageModel model(m, layout, 99);
  const double per_token = loss_of(model, m) / static_cast<double>(2 * m.seq_len);
  CHECK(per_token == Approx(std::log(static_cast<double>(m.vocab))).epsilon(0.05));
}
