// A stage's MoE layers: their parameters, and how the layer (runtime/cpu/moe_layer) runs over TP, as
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
#include "runtime/cpu/cpu_model.hpp"
#include "runtime/tp_split.hpp"
#include "runtime/weight_init.hpp"

namespace trainsim::cpu {

bool StageModel::routes_own_rows() const { return moe_shape_.experts > 0 && layout_.ep > 1 && layout_.tp > 1; }

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
