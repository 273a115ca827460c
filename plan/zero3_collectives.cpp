// ZeRO-3's collective calls per layer (plan/zero3_collectives.hpp).
#include "plan/zero3_collectives.hpp"

#include <algorithm>
#include <vector>

namespace trainsim {

namespace {

// The parameter modules of one layer in the order the forward runs them, in elements per rank (a
// TP-split module holds 1/tp of its weight). DeepSpeed runs the model code it is given; the layout
// taken is the Hugging Face one of each family: a SwiGLU model's attention as separate q, k, v and
// o projections and its MLP as gate, up and down (LlamaDecoderLayer), a GELU model's as a fused
// query_key_value, dense, dense_h_to_4h and dense_4h_to_h (GPT-NeoX, BLOOM, Megatron-DeepSpeed's
// GPT). Norm weights and biases below stage3_param_persistence_threshold stay whole on every rank
// and are never gathered. An MoE layer: its router, then each local expert's MLP.
std::vector<double> layer_modules(const ModelSpec& m, const ParallelPlan& p) {
  const double h = static_cast<double>(m.hidden), tp = static_cast<double>(p.tp);
  const double q = static_cast<double>(m.attention_width()), kv = static_cast<double>(m.kv_width());
  std::vector<double> modules;
  const auto add = [&](double elements, double split) {
    if (elements / split >= kDeepSpeedPersistenceThreshold) modules.push_back(elements / split);
  };
  const bool swiglu = m.ffn_kind == FfnKind::kSwiglu;
  if (swiglu) {
    add(h * q, tp);
    add(h * kv, tp);
    add(h * kv, tp);
  } else {
    add(h * (q + 2.0 * kv), tp);
  }
  add(q * h, tp);
  const auto mlp = [&](double f, double split) {
    if (swiglu) add(h * f, split);
    add(h * f, split);
    add(f * h, split);
  };
  if (!m.moe) {
    mlp(static_cast<double>(m.ffn_hidden), tp);
    return modules;
  }
  add(h * static_cast<double>(m.moe->experts), 1.0);
  const int64_t local = std::max<int64_t>(1, m.moe->experts / std::max<int64_t>(1, p.ep));
  for (int64_t e = 0; e < local; ++e) mlp(static_cast<double>(m.moe->expert_ffn_hidden), static_cast<double>(p.expert_tp_size()));
  if (m.moe->shared_experts > 0) mlp(static_cast<double>(m.moe->shared_experts * m.moe->expert_ffn_hidden), tp);
  return modules;
}

}  // namespace

Zero3Calls zero3_calls(const ModelSpec& model, const ParallelPlan& plan) {
  Zero3Calls calls;
  if (plan.zero3_collectives != Zero3Collectives::kDeepSpeed) return calls;
  const std::vector<double> modules = layer_modules(model, plan);
  double layer = 0;
  for (double e : modules) layer += e;
  if (modules.empty() || layer <= 0) return calls;
  // The coordinator's prefetch (fetch_sub_module): one all_gather_coalesced call takes the next
  // modules in trace order until their elements reach the bucket (the module that crosses it
  // included), so a call spans layers when modules are small and holds one module when a module
  // alone fills the bucket. Counted over a run of layers, in the steady state.
  constexpr int kLayers = 64;
  int64_t gathers = 0;
  double filled = 0;
  for (int l = 0; l < kLayers; ++l) {
    for (double e : modules) {
      filled += e;
      if (filled >= plan.deepspeed_prefetch_bucket) {
        ++gathers;
        filled = 0;
      }
    }
  }
  if (filled > 0) ++gathers;
  calls.gathers_per_layer = static_cast<double>(gathers) / kLayers;
  // Gradients fill the reduce bucket in the backward (stage3.py __add_grad_to_ipg_bucket); a full
  // bucket is reduce-scattered in one call.
  calls.reduces_per_layer = layer / plan.deepspeed_reduce_bucket;
  return calls;
}

}  // namespace trainsim
