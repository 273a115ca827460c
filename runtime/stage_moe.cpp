// A stage's MoE parameters: each layer's router (replicated), this EP rank's experts and the shared
// experts, drawn as the dense FFN's are (GPT-2 init: 0.02, the output projection scaled by
// 1 / sqrt(2 x layers)) with each expert's tensors named by its global id, so every EP layout
// holds the same experts. Biases where the model has linear biases (as plan/ counts them:
// model/param_count.cpp), none on the router. The forward and backward are runtime/moe_layer's.
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "runtime/cpu_model.hpp"
#include "runtime/weight_init.hpp"

namespace trainsim::cpu {

void StageModel::add_moe(const ModelSpec& m, const std::string& prefix, uint64_t seed, LayerParams& p) {
  const MoeSpec& moe = *m.moe;
  TRAINSIM_ASSERT(layout_.tp == 1, "check_runtime_plan refuses tp > 1 with an MoE model");
  TRAINSIM_ASSERT(moe.experts % layout_.ep == 0, "check_expert_parallel keeps ep | experts");
  const int64_t h = m.hidden, gates = swiglu_ ? 2 : 1;
  const float std = 0.02f, residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(m.layers));  // as the dense FFN's
  p.router = add(prefix + "router", normal_matrix(prefix + "router", seed, h, moe.experts, std), false, false);
  // w_1, b_1, w_2, b_2 of an FFN `width` wide under `name`; `expert` marks a routed expert's.
  const auto add_ffn = [&](const std::string& name, int64_t width, bool expert, size_t* out) {
    out[0] = add(name + "w_1", normal_matrix(name + "w_1", seed, h, gates * width, std), false, false);
    out[1] = m.linear_bias ? add(name + "b_1", Matrix::Zero(1, gates * width), false, false) : kNone;
    out[2] = add(name + "w_2", normal_matrix(name + "w_2", seed, width, h, residual_std), false, false);
    out[3] = m.linear_bias ? add(name + "b_2", Matrix::Zero(1, h), false, false) : kNone;
    for (int i = 0; i < 4; ++i) {
      if (out[i] != kNone) params_[out[i]].expert = expert;
    }
  };
  const int64_t local = moe.experts / layout_.ep;
  p.experts.assign(static_cast<size_t>(4 * local), kNone);
  for (int64_t j = 0; j < local; ++j) {
    const int64_t e = layout_.ep_rank * local + j;
    add_ffn(prefix + "expert" + std::to_string(e) + ".", moe.expert_ffn_hidden, true, &p.experts[static_cast<size_t>(4 * j)]);
  }
  if (moe.shared_experts > 0) add_ffn(prefix + "shared.", moe.shared_experts * moe.expert_ffn_hidden, false, p.shared);
}

MoeParams StageModel::moe_params(const LayerParams& p) {
  const auto param = [&](size_t i) { return i == kNone ? nullptr : &params_[i]; };
  const auto ffn = [&](const size_t* i) { return FfnParams{param(i[0]), param(i[1]), param(i[2]), param(i[3])}; };
  MoeParams out;
  out.router = param(p.router);
  for (size_t j = 0; j < p.experts.size(); j += 4) out.experts.push_back(ffn(&p.experts[j]));
  out.shared = ffn(p.shared);
  return out;
}

}  // namespace trainsim::cpu
