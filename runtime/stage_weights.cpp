// runtime/stage_weights.hpp: a stage's initial parameters, in the order both backends keep them.
#include "runtime/stage_weights.hpp"

#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "runtime/tp_split.hpp"
#include "runtime/weight_init.hpp"

namespace trainsim::runtime {

void check_runtime_supports(const ModelSpec& m) {
  model_problems(m).throw_if_any("run a GPT-2- or Llama-style model (dense or MoE), e.g. --model gpt-tiny or gpt2-124m");
}

ProblemList model_problems(const ModelSpec& m) {
  ProblemList p;
  const std::string where = "model \"" + m.name + "\"";
  if (m.position == PositionKind::kAlibi) p.add(where + ": positions alibi (the CPU runtime implements learned positions and RoPE)");
  if (m.windowed_layers() > 0) p.add(where + ": sliding-window attention (the CPU runtime attends to the whole causal prefix)");
  if (m.position == PositionKind::kRope && m.head_dim % 2 != 0) {
    p.add(where + ": head_dim " + std::to_string(m.head_dim) + " is odd (RoPE turns pairs of dimensions)");
  }
  if (m.mla) p.add(where + ": multi-head latent attention is not implemented in the CPU runtime (it runs Q, K and V projections; trainsim predict prices MLA, the runtime would train a different model)");
  if (m.moe && m.moe->dense_layers > 0) {
    p.add(where + ": moe/dense_layers " + std::to_string(m.moe->dense_layers) + " (dense first layers of an MoE model are not implemented in the CPU runtime: every layer is MoE there)");
  }
  if (m.mtp_layers > 0) {
    p.add(where + ": mtp_layers " + std::to_string(m.mtp_layers) + " (multi-token prediction is not implemented in the CPU runtime; --mtp-layers 0 runs the model without it)");
  }
  if (m.dropout) p.add(where + ": dropout is not implemented in the CPU runtime (describe the model with \"dropout\": false)");
  if (m.head_dim * m.heads != m.hidden) p.add(where + ": head_dim x heads must equal hidden in the CPU runtime");
  return p;
}

bool experts_route_own_rows(const ModelSpec& m, const StageLayout& layout) {
  return m.moe && m.moe->experts > 0 && layout.ep > 1 && layout.tp > 1;
}

namespace {

// Builds the parameters one by one, recording where each went.
class WeightBuilder {
 public:
  WeightBuilder(const ModelSpec& m, const StageLayout& layout, uint64_t seed) : m_(m), layout_(layout), seed_(seed) {}

  StageWeights build();

 private:
  size_t add(const std::string& name, Matrix value, bool tp_split, bool sp_partial);
  void add_norm(const std::string& name, size_t& gamma, size_t& beta);
  void add_layer(int64_t l);
  void add_moe(const std::string& prefix, LayerWeights& p);
  void add_ffn(const std::string& name, int64_t width, int64_t parts, bool expert, size_t* out);

  const ModelSpec& m_;
  const StageLayout& layout_;
  const uint64_t seed_;
  const float std_ = 0.02f;
  const float residual_std_ = 0.02f / std::sqrt(2.0f * static_cast<float>(m_.layers));  // GPT-2 init
  StageWeights w_;
};

size_t WeightBuilder::add(const std::string& name, Matrix value, bool tp_split, bool sp_partial) {
  Param p;
  p.name = name;
  p.grad = Matrix::Zero(value.rows(), value.cols());
  p.value = std::move(value);
  p.tp_split = tp_split;
  p.sp_partial_grad = sp_partial && layout_.sequence_parallel;
  w_.params.push_back(std::move(p));
  return w_.params.size() - 1;
}

// A norm's gamma and (LayerNorm) beta: replicated over TP, their gradients partial with SP.
void WeightBuilder::add_norm(const std::string& name, size_t& gamma, size_t& beta) {
  gamma = add(name + "_g", Matrix::Ones(1, m_.hidden), false, true);
  beta = m_.norm == NormKind::kRmsNorm ? kNoParam : add(name + "_b", Matrix::Zero(1, m_.hidden), false, true);
}

void WeightBuilder::add_layer(int64_t l) {
  const int64_t h = m_.hidden, t = layout_.tp, r = layout_.tp_rank;
  const bool all_biases = m_.linear_bias, qkv_bias = m_.linear_bias || m_.qkv_bias;
  const std::string n = "layer" + std::to_string(l) + ".";
  LayerWeights p;
  add_norm(n + "ln1", p.ln1_g, p.ln1_b);
  const std::vector<int64_t> qkv_blocks = {m_.heads * m_.head_dim, m_.kv_width(), m_.kv_width()};
  const int64_t qkv_width = m_.heads * m_.head_dim + 2 * m_.kv_width();
  p.w_qkv = add(n + "w_qkv", block_slice(normal_matrix(n + "w_qkv", seed_, h, qkv_width, std_), qkv_blocks, t, r), true, false);
  p.b_qkv = qkv_bias ? add(n + "b_qkv", Matrix::Zero(1, qkv_width / t), true, false) : kNoParam;
  p.w_o = add(n + "w_o", row_slice(normal_matrix(n + "w_o", seed_, h, h, residual_std_), t, r), true, false);
  p.b_o = all_biases ? add(n + "b_o", Matrix::Zero(1, h), false, true) : kNoParam;
  add_norm(n + "ln2", p.ln2_g, p.ln2_b);
  if (m_.moe) {
    add_moe(n, p);
    w_.layers.push_back(p);
    return;
  }
  // SwiGLU: FC1 is [gate | up], each ffn_hidden wide.
  const std::vector<int64_t> fc1_blocks(m_.ffn_kind == FfnKind::kSwiglu ? 2 : 1, m_.ffn_hidden);
  const int64_t fc1_width = m_.ffn_hidden * static_cast<int64_t>(fc1_blocks.size());
  p.w_1 = add(n + "w_1", block_slice(normal_matrix(n + "w_1", seed_, h, fc1_width, std_), fc1_blocks, t, r), true, false);
  p.b_1 = all_biases ? add(n + "b_1", Matrix::Zero(1, fc1_width / t), true, false) : kNoParam;
  p.w_2 = add(n + "w_2", row_slice(normal_matrix(n + "w_2", seed_, m_.ffn_hidden, h, residual_std_), t, r), true, false);
  p.b_2 = all_biases ? add(n + "b_2", Matrix::Zero(1, h), false, true) : kNoParam;
  w_.layers.push_back(p);
}

// w_1, b_1, w_2, b_2 of an FFN `width` wide under `name`, this rank's slice of `parts` TP slices
// (b_2 whole: its gradient is complete on every rank); `expert` marks a routed expert's.
void WeightBuilder::add_ffn(const std::string& name, int64_t width, int64_t parts, bool expert, size_t* out) {
  const int64_t h = m_.hidden, gates = m_.ffn_kind == FfnKind::kSwiglu ? 2 : 1;
  const int64_t index = parts > 1 ? layout_.tp_rank : 0;
  const std::vector<int64_t> blocks(static_cast<size_t>(gates), width);  // SwiGLU: [gate | up]
  const Matrix w_1 = normal_matrix(name + "w_1", seed_, h, gates * width, std_);
  out[0] = add(name + "w_1", block_slice(w_1, blocks, parts, index), parts > 1, false);
  out[1] = m_.linear_bias ? add(name + "b_1", Matrix::Zero(1, gates * width / parts), parts > 1, false) : kNoParam;
  out[2] = add(name + "w_2", row_slice(normal_matrix(name + "w_2", seed_, width, h, residual_std_), parts, index), parts > 1, false);
  out[3] = m_.linear_bias ? add(name + "b_2", Matrix::Zero(1, h), false, false) : kNoParam;
  for (int i = 0; i < 4; ++i) {
    if (out[i] != kNoParam) w_.params[out[i]].expert = expert;
  }
}

// The router (replicated over TP; routing its own rows, each TP rank's gradient covers only
// them), this EP rank's experts (split over TP only without EP) and the shared experts.
void WeightBuilder::add_moe(const std::string& prefix, LayerWeights& p) {
  const MoeSpec& moe = *m_.moe;
  const bool own_rows = experts_route_own_rows(m_, layout_);
  TRAINSIM_ASSERT(moe.experts % layout_.ep == 0, "check_expert_parallel keeps ep | experts");
  TRAINSIM_ASSERT(!own_rows || layout_.sequence_parallel, "check_expert_parallel refuses ep > 1 with tp > 1 without SP");
  p.router = add(prefix + "router", normal_matrix(prefix + "router", seed_, m_.hidden, moe.experts, std_), false, own_rows);
  const int64_t local = moe.experts / layout_.ep, expert_tp = layout_.ep == 1 ? layout_.tp : 1;
  p.experts.assign(static_cast<size_t>(4 * local), kNoParam);
  for (int64_t j = 0; j < local; ++j) {
    const int64_t e = layout_.ep_rank * local + j;
    add_ffn(prefix + "expert" + std::to_string(e) + ".", moe.expert_ffn_hidden, expert_tp, true, &p.experts[static_cast<size_t>(4 * j)]);
  }
  if (moe.shared_experts > 0) add_ffn(prefix + "shared.", moe.shared_experts * moe.expert_ffn_hidden, layout_.tp, false, p.shared);
}

StageWeights WeightBuilder::build() {
  const int64_t h = m_.hidden, t = layout_.tp, r = layout_.tp_rank;
  const bool rope = m_.position == PositionKind::kRope;
  // Token embedding and LM head: this TP rank's vocabulary rows.
  if (layout_.embedding || (layout_.head && m_.tied_embeddings)) {
    w_.wte = add("wte", row_slice(normal_matrix("wte", seed_, m_.vocab, h, std_), t, r), t > 1, false);
  }
  if (layout_.embedding && !rope) w_.wpe = add("wpe", normal_matrix("wpe", seed_, m_.max_positions, h, std_), false, true);
  for (const LayerRange& chunk : layout_.chunks) {
    for (int64_t l = chunk.first; l < chunk.last; ++l) add_layer(l);
  }
  if (layout_.head) {
    add_norm("lnf", w_.lnf_g, w_.lnf_b);
    w_.head = m_.tied_embeddings ? w_.wte : add("lm_head", row_slice(normal_matrix("lm_head", seed_, m_.vocab, h, std_), t, r), t > 1, false);
  }
  return std::move(w_);
}

}  // namespace

StageWeights initial_stage_weights(const ModelSpec& model, const StageLayout& layout, uint64_t seed) {
  check_runtime_supports(model);
  TRAINSIM_ASSERT(model.vocab % layout.tp == 0, "check_runtime_plan refuses a vocabulary that tp does not divide");
  return WeightBuilder(model, layout, seed).build();
}

}  // namespace trainsim::runtime
