// A stage's initial weights, which both backends start from: every parameter this rank holds
// (its TP slice of each full tensor, its EP rank's experts), drawn with the seed so that every
// layout and both backends start from the same model (runtime/weight_init.hpp). In, the model, the
// stage's layout and the seed; out, the parameters in a fixed order and where each layer's are.
// The CPU backend trains these tensors in place; the CUDA backend copies them to the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/problem_list.hpp"
#include "model/model_spec.hpp"
#include "runtime/param.hpp"
#include "runtime/stage_layout.hpp"

namespace trainsim::runtime {

inline constexpr size_t kNoParam = static_cast<size_t>(-1);  // a parameter the model does not have

// Indices into StageWeights::params of one layer's parameters; biases (and RMSNorm's beta) are
// kNoParam where the model has none. MoE layers have no w_1 .. b_2 but a router and experts.
struct LayerWeights {
  size_t ln1_g = kNoParam, ln1_b = kNoParam, w_qkv = kNoParam, b_qkv = kNoParam, w_o = kNoParam, b_o = kNoParam;
  size_t ln2_g = kNoParam, ln2_b = kNoParam;
  size_t w_1 = kNoParam, b_1 = kNoParam, w_2 = kNoParam, b_2 = kNoParam;  // (h, f_l [x2 SwiGLU]), (1, ..), (f_l, h), (1, h)
  size_t router = kNoParam;                  // MoE: (h, experts)
  std::vector<size_t> experts;               // MoE: w_1, b_1, w_2, b_2 of each local expert (4 per expert)
  size_t shared[4] = {kNoParam, kNoParam, kNoParam, kNoParam};  // MoE shared experts: w_1, b_1, w_2, b_2
};

struct StageWeights {
  std::vector<Param> params;         // in creation order (the checkpoint's and the optimizer's order)
  std::vector<LayerWeights> layers;  // by local layer (runtime/stage_layout.hpp)
  size_t wte = kNoParam, wpe = kNoParam, lnf_g = kNoParam, lnf_b = kNoParam;
  size_t head = kNoParam;  // the LM head's weight (vocab_l, h): wte when tied
};

// The stage's parameters under `seed`: GPT-2's initialisation (N(0, 0.02), the residual
// projections scaled by 1 / sqrt(2 x layers)), norms at 1 and 0, biases at 0. Throws InputError
// when the runtimes cannot run the model (check_runtime_supports).
StageWeights initial_stage_weights(const ModelSpec& model, const StageLayout& layout, uint64_t seed);

// With ep > 1 and tp > 1 each TP rank routes its own sequence-parallel rows through the experts
// (their router gradient is then partial over TP); otherwise the experts are one TP region.
bool experts_route_own_rows(const ModelSpec& model, const StageLayout& layout);

// What keeps the runtimes from running this model (they implement GPT-2- and Llama-style models,
// dense or MoE), and the same as an InputError.
ProblemList model_problems(const ModelSpec& model);
void check_runtime_supports(const ModelSpec& model);

}  // namespace trainsim::runtime
