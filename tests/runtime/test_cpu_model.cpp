// The CPU model's backward against finite differences, and its forward against known properties
// (a fresh model's loss is about log(vocab)).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "model/model_catalog.hpp"
#include "model/param_count.hpp"
#include "runtime/cpu/cpu_model.hpp"

using namespace trainsim;
using namespace trainsim::cpu;
using namespace trainsim::runtime;

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

// The loss, and (MoE) every layer's top-k choice in `routes`.
double loss_of(StageModel& model, const ModelSpec& m, std::vector<int32_t>* routes = nullptr) {
  SingleRankGroup tp;
  MicroBatchState s = batch_of(2, m, 7);
  double loss = 0;
  model.forward(Matrix(), s, tp, 1.0f, loss);
  for (const LayerCache& c : s.layers) {
    if (routes != nullptr) routes->insert(routes->end(), c.moe.routing.expert.begin(), c.moe.routing.expert.end());
  }
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

// Llama-style: RMSNorm, RoPE, untied LM head, no biases, SwiGLU, GQA.
ModelSpec tiny_llama() {
  ModelSpec m = tiny_swiglu_gqa();
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRope;
  m.rope_theta = 500000.0;
  m.tied_embeddings = false;
  m.linear_bias = false;
  return m;
}

// Three elements of every parameter. With MoE the top-k choice is piecewise constant: a perturbation
// that changes some token's experts makes the loss jump (not differentiable there), so such an
// element is drawn again.
void check_gradients_against_finite_differences(const ModelSpec& m) {
  const StageLayout layout = stage_layout(m, ParallelPlan{}, 0, 0);  // the whole model on one rank
  StageModel model(m, layout, 1234);
  std::vector<int32_t> routes;
  loss_of(model, m, &routes);
  SingleRankGroup tp;
  MicroBatchState s = batch_of(2, m, 7);
  double loss = 0;
  model.forward(Matrix(), s, tp, 1.0f, loss);
  model.backward(Matrix(), s, tp);
  model.finish_gradients(tp);
  std::mt19937 pick(3);
  for (Param& p : model.params()) {
    INFO(p.name);
    int checked = 0;
    for (int draws = 0; checked < 3 && draws < 50; ++draws) {
      const Eigen::Index i = static_cast<Eigen::Index>(pick() % static_cast<unsigned>(p.value.size()));
      const float saved = p.value.data()[i];
      const float eps = m.moe ? 5e-4f : 3e-3f;  // smaller steps cross fewer routing ties
      std::vector<int32_t> routes_up, routes_down;
      p.value.data()[i] = saved + eps;
      const double up = loss_of(model, m, &routes_up);
      p.value.data()[i] = saved - eps;
      const double down = loss_of(model, m, &routes_down);
      p.value.data()[i] = saved;
      if (routes_up != routes || routes_down != routes) continue;  // a token changed experts: draw another element
      const double numeric = (up - down) / (2.0 * eps);
      CHECK(p.grad.data()[i] == Approx(numeric).margin(2e-3).epsilon(0.03));
      ++checked;
    }
    CHECK(checked == 3);
  }
}

TEST_CASE("every parameter's gradient matches central finite differences") { check_gradients_against_finite_differences(tiny()); }

TEST_CASE("with SwiGLU and grouped-query attention every gradient matches finite differences") {
  check_gradients_against_finite_differences(tiny_swiglu_gqa());
}

TEST_CASE("a Llama-style model (RMSNorm, RoPE, untied head, no biases): every gradient matches finite differences") {
  check_gradients_against_finite_differences(tiny_llama());
}

TEST_CASE("with biases on Q, K and V only (Qwen2) every gradient matches finite differences") {
  ModelSpec m = tiny_llama();
  m.qkv_bias = true;
  check_gradients_against_finite_differences(m);
}

// MoE: every FFN a mixture of 4 experts 8 wide, top 2, and one shared expert (runtime/cpu/moe_layer).
ModelSpec tiny_moe(ModelSpec m) {
  m.moe = MoeSpec{4, 2, 8, 1};
  return m;
}

TEST_CASE("an MoE model (top-2 of 4 experts, biases, a shared expert): every gradient, the router's too, matches finite differences") {
  check_gradients_against_finite_differences(tiny_moe(tiny()));
}

TEST_CASE("a Llama-style MoE model (SwiGLU experts, no biases): every gradient matches finite differences") {
  check_gradients_against_finite_differences(tiny_moe(tiny_llama()));
}

TEST_CASE("an MoE model on one rank holds the parameters the simulator counts, and with ep 2 each rank half the experts") {
  const ModelSpec m = tiny_moe(tiny_llama());
  StageModel whole(m, stage_layout(m, ParallelPlan{}, 0, 0), 1);
  int64_t count = 0;
  for (const Param& p : whole.params()) count += p.value.size();
  CHECK(count == count_params(m).total);
  ParallelPlan ep2;
  ep2.dp = 2;
  ep2.ep = 2;
  StageModel second(m, stage_layout(m, ep2, 0, 0, 0, 1), 1);
  std::vector<std::string> experts;
  for (const Param& p : second.params()) {
    if (p.expert) experts.push_back(p.name);
  }
  CHECK(experts == std::vector<std::string>{"layer0.expert2.w_1", "layer0.expert2.w_2", "layer0.expert3.w_1", "layer0.expert3.w_2",
                                            "layer1.expert2.w_1", "layer1.expert2.w_2", "layer1.expert3.w_1", "layer1.expert3.w_2"});
  for (const Param& p : second.params()) {  // the same values as the one-rank model's tensors of the same name
    for (const Param& q : whole.params()) {
      if (q.name == p.name) CHECK(q.value == p.value);
    }
  }
}

TEST_CASE("a Llama-style model has the parameters it says: no biases or position table, an LM head of its own") {
  const ModelSpec m = tiny_llama();
  StageModel model(m, stage_layout(m, ParallelPlan{}, 0, 0), 1);
  std::vector<std::string> names;
  for (const Param& p : model.params()) names.push_back(p.name);
  const auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  CHECK(has("wte"));
  CHECK(has("lm_head"));
  CHECK(has("layer0.ln1_g"));
  CHECK_FALSE(has("wpe"));
  CHECK_FALSE(has("layer0.ln1_b"));
  CHECK_FALSE(has("layer0.b_qkv"));
  CHECK_FALSE(has("layer1.b_2"));
  CHECK_FALSE(has("lnf_b"));
  int64_t count = 0;
  for (const Param& p : model.params()) count += p.value.size();
  // Per layer: 2 norms (h) + QKV h x (a + 2 kv) d + O h x h + SwiGLU 3 h f; embeddings 2 V h; final norm h.
  const int64_t h = m.hidden, per_layer = 2 * h + h * (m.heads + 2 * m.kv_heads) * m.head_dim + h * h + 3 * h * m.ffn_hidden;
  CHECK(count == m.layers * per_layer + 2 * m.vocab * h + h);
}

TEST_CASE("RoPE: scores depend only on the distance between positions, and the inverse turns back") {
  const int64_t seq = 6, heads = 1, kv = 1, d = 8;
  Matrix qkv = Matrix::Random(seq, (heads + 2 * kv) * d);
  // The same query and key vector at every position.
  for (int64_t r = 1; r < seq; ++r) qkv.row(r) = qkv.row(0);
  const Matrix original = qkv;
  rotary_embedding(qkv, seq, heads, kv, d, 10000.0, false);
  const auto score = [&](int64_t i, int64_t j) { return qkv.row(i).head(d).dot(qkv.row(j).segment(d, d)); };
  CHECK(score(3, 1) == Approx(score(5, 3)).epsilon(1e-5));
  CHECK(score(2, 2) == Approx(score(0, 0)).epsilon(1e-5));
  CHECK(std::abs(score(4, 0) - score(4, 3)) > 1e-4);  // distance matters
  CHECK(qkv.row(0) == original.row(0));  // position 0 does not turn
  CHECK(qkv.rightCols(kv * d) == original.rightCols(kv * d));  // V is left alone
  rotary_embedding(qkv, seq, heads, kv, d, 10000.0, true);
  CHECK((qkv - original).cwiseAbs().maxCoeff() < 1e-5f);
}

TEST_CASE("RMSNorm: unit root-mean-square rows, scaled by gamma") {
  Matrix x(2, 4);
  x << 1, 2, 3, 4, -2, 0, 0, 2;
  Vector gamma(4);
  gamma << 1, 1, 2, 1;
  LayerNormCache cache;
  const Matrix y = rms_norm(x, gamma, cache);
  const float rms0 = std::sqrt((1 + 4 + 9 + 16) / 4.0f);
  CHECK(y(0, 0) == Approx(1 / rms0).epsilon(1e-4));
  CHECK(y(0, 2) == Approx(2 * 3 / rms0).epsilon(1e-4));
  CHECK(y(1, 0) == Approx(-2 / std::sqrt(2.0f)).epsilon(1e-4));
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

TEST_CASE("vocabulary-parallel cross-entropy over two shards equals the whole-row cross-entropy") {
  Matrix logits(6, 10);
  for (Eigen::Index i = 0; i < logits.size(); ++i) logits.data()[i] = static_cast<float>(std::sin(1.7 * static_cast<double>(i)) * 3.0);
  const std::vector<int32_t> targets = {0, 4, 5, 9, 2, 7};
  Matrix whole_d;
  const double whole = cross_entropy(logits, targets, 0.25f, whole_d);
  // Two ranks holding ids 0-4 and 5-9; the reductions done by hand.
  const Matrix left = logits.leftCols(5), right = logits.rightCols(5);
  const Matrix max = row_max(left).cwiseMax(row_max(right));
  Matrix exp_left, exp_right;
  const Matrix stats = shard_softmax_stats(left, max, targets, 0, exp_left) + shard_softmax_stats(right, max, targets, 5, exp_right);
  Matrix d_left, d_right;
  const double loss_left = shard_cross_entropy_grad(exp_left, max, stats, targets, 0, 0.25f, d_left);
  const double loss_right = shard_cross_entropy_grad(exp_right, max, stats, targets, 5, 0.25f, d_right);
  CHECK(loss_left == Approx(whole).epsilon(1e-6));
  CHECK(loss_right == Approx(whole).epsilon(1e-6));  // every rank computes the whole loss
  CHECK((d_left - whole_d.leftCols(5)).cwiseAbs().maxCoeff() < 1e-7);
  CHECK((d_right - whole_d.rightCols(5)).cwiseAbs().maxCoeff() < 1e-7);
}
