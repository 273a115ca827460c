// A stage's MoE layers: their parameters, and how the layer (runtime/moe_layer) runs over TP, as
// plan/moe_lowering.cpp prices it after Megatron-Core:
//  - ep 1: the experts are split over TP like a dense FFN (Megatron-Core's default expert TP = TP):
//    every TP rank routes all the TP region's tokens (gathered with SP) with the replicated router,
//    so their choices agree, runs its 1/tp of every expert and of the shared experts, and the
//    partial sums leave the region as a dense FFN's (all-reduce, or reduce-scatter with SP).
//  - ep > 1 with tp > 1 (SP required, as validate_plan and Megatron-Core require): whole experts
//    (expert TP 1); each rank routes its own SP rows over the EP group, and only the shared experts
//    form a TP region (gather, 1/tp of them, reduce-scatter).
// Parameters are drawn as the dense FFN's are (GPT-2 init: 0.02, the output projection scaled by
// 1 / sqrt(2 x layers)) from full tensors, each expert's named by its global id, then sliced, so
// every layout holds the same experts. Biases where the model has linear biases (as plan/ counts
// them: model/param_count.cpp), none on the router.
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "runtime/cpu_model.hpp"
#include "runtime/tp_split.hpp"
#include "runtime/weight_init.hpp"

namespace trainsim::cpu {

bool StageModel::routes_own_rows() const { return moe_shape_.experts > 0 && layout_.ep > 1 && layout_.tp > 1; }

void StageModel::add_moe(const ModelSpec& m, const std::string& prefix, uint64_t seed, LayerParams& p) {
  const MoeSpec& moe = *m.moe;
  TRAINSIM_ASSERT(moe.experts % layout_.ep == 0, "check_expert_parallel keeps ep | experts");
  TRAINSIM_ASSERT(!routes_own_rows() || layout_.sequence_parallel, "check_expert_parallel refuses ep > 1 with tp > 1 without SP");
  const int64_t h = m.hidden, gates = swiglu_ ? 2 : 1;
  const float std = 0.02f, residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(m.layers));  // as the dense FFN's
  // Replicated over TP; routing its own rows, each TP rank's gradient covers only them.
  p.router = add(prefix + "router", normal_matrix(prefix + "router", seed, h, moe.experts, std), false, routes_own_rows());
  // w_1, b_1, w_2, b_2 of an FFN `width` wide under `name`, this rank's slice of `parts` TP slices
  // (b_2 whole: its gradient is complete on every rank); `expert` marks a routed expert's.
  const auto add_ffn = [&](const std::string& name, int64_t width, int64_t parts, bool expert, size_t* out) {
    const int64_t index = parts > 1 ? layout_.tp_rank : 0;
    const std::vector<int64_t> blocks(static_cast<size_t>(gates), width);  // SwiGLU: [gate | up]
    const Matrix w_1 = normal_matrix(name + "w_1", seed, h, gates * width, std);
    out[0] = add(name + "w_1", block_slice(w_1, blocks, parts, index), parts > 1, false);
    out[1] = m.linear_bias ? add(name + "b_1", Matrix::Zero(1, gates * width / parts), parts > 1, false) : kNone;
    out[2] = add(name + "w_2", row_slice(normal_matrix(name + "w_2", seed, width, h, residual_std), parts, index), parts > 1, false);
    out[3] = m.linear_bias ? add(name + "b_2", Matrix::Zero(1, h), false, false) : kNone;
    for (int i = 0; i < 4; ++i) {
      if (out[i] != kNone) params_[out[i]].expert = expert;
    }
  };
  const int64_t local = moe.experts / layout_.ep, expert_tp = layout_.ep == 1 ? layout_.tp : 1;
  p.experts.assign(static_cast<size_t>(4 * local), kNone);
  for (int64_t j = 0; j < local; ++j) {
    const int64_t e = layout_.ep_rank * local + j;
    add_ffn(prefix + "expert" + std::to_string(e) + ".", moe.expert_ffn_hidden, expert_tp, true, &p.experts[static_cast<size_t>(4 * j)]);
  }
  if (moe.shared_experts > 0) add_ffn(prefix + "shared.", moe.shared_experts * moe.expert_ffn_hidden, layout_.tp, false, p.shared);
}

MoeParams StageModel::moe_params(const LayerParams& p) {
  MoeParams out;
  out.router = &params_[p.router];
  for (size_t j = 0; j < p.experts.size(); j += 4) out.experts.push_back(ffn_params(&p.experts[j]));
  return out;
}

FfnParams StageModel::ffn_params(const size_t* i) {
  const auto param = [&](size_t k) { return k == kNone ? nullptr : &params_[k]; };
  return FfnParams{param(i[0]), param(i[1]), param(i[2]), param(i[3])};
}

// From c.ln2_out (the TP region's tokens, or with routes_own_rows() this rank's SP rows) to the
// FFN's output on this rank's rows, out of the TP region.
Matrix StageModel::moe_mlp_forward(const LayerParams& p, LayerCache& c, TpGroup& tp) {
  const bool sp = layout_.sequence_parallel, shared = p.shared[0] != kNone;
  if (!routes_own_rows()) {  // one TP region: the experts' partial sums and the shared experts' reduced together
    Matrix y = moe_forward(c.ln2_out, moe_params(p), moe_shape_, experts_group(), tp, c.moe);
    if (shared) y += ffn_forward(c.ln2_out, ffn_params(p.shared), swiglu_, tp.rank() == 0, c.shared);
    return leave_tp_region(std::move(y), sp, tp);
  }
  Matrix y = moe_forward(c.ln2_out, moe_params(p), moe_shape_, experts_group(), whole_experts_, c.moe);
  if (shared) {
    c.shared.in = enter_tp_region(c.ln2_out, sp, tp);
    y += leave_tp_region(ffn_forward(c.shared.in, ffn_params(p.shared), swiglu_, tp.rank() == 0, c.shared), sp, tp);
  }
  return y;
}

// From the FFN output's gradient (this rank's rows) to c.ln2_out's, the sums over TP taken.
Matrix StageModel::moe_mlp_backward(const LayerParams& p, const Matrix& dy, const LayerCache& c, TpGroup& tp) {
  const bool sp = layout_.sequence_parallel, shared = p.shared[0] != kNone;
  if (!routes_own_rows()) {
    const Matrix dm = enter_tp_region(dy, sp, tp);
    Matrix dx = moe_backward(dm, c.ln2_out, moe_params(p), moe_shape_, experts_group(), tp, c.moe);
    if (shared) dx += ffn_backward(dm, c.ln2_out, ffn_params(p.shared), swiglu_, c.shared);
    return leave_tp_region(std::move(dx), sp, tp);
  }
  Matrix dx = moe_backward(dy, c.ln2_out, moe_params(p), moe_shape_, experts_group(), whole_experts_, c.moe);
  if (shared) {
    const Matrix dshared = ffn_backward(enter_tp_region(dy, sp, tp), c.shared.in, ffn_params(p.shared), swiglu_, c.shared);
    dx += leave_tp_region(dshared, sp, tp);
  }
  return dx;
}

}  // namespace trainsim::cpu
