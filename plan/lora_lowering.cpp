// LoRA fine-tuning (ParallelPlan::lora_rank), as Megatron-Bridge runs its peft "lora" scheme
// (src/megatron/bridge/peft/lora.py: target_modules linear_qkv, linear_proj, linear_fc1, linear_fc2;
// LoRALinear: base(x) + B(A(x)) x alpha / r). The base weights are frozen: each target keeps its
// forward and input-gradient GEMMs and loses its weight-gradient GEMM; beside it an adapter runs
// x A (k -> r) and then B (r -> n), its output added to the base's, and in the backward the two
// input gradients, the two weight gradients and the adapter's input gradient added to the base's.
// The adapters are Megatron-Core's parallel linears in the model's 16-bit type (no FP8 casts); their
// TP collectives (r wide) are left out.
#include <algorithm>
#include <string>

#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

namespace {

bool lora_target(const std::string& name) { return name == "qkv" || name == "proj" || name == "fc1" || name == "fc2"; }

bool frozen_weight_gradient(const Op& op) {
  const std::string name = op.name;
  const std::string suffix = "_wgrad";
  return op.kind == OpKind::kGemm && name.rfind("lora_", 0) != 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void add_lora(LayerWork& w, int64_t rank, double e) {
  if (rank <= 0) return;
  std::vector<Op> forward, backward;
  for (const Op& base : w.forward) {
    if (base.kind != OpKind::kGemm || !lora_target(base.name)) continue;
    const double out = static_cast<double>(base.m) * static_cast<double>(base.n) * e;
    const double in = static_cast<double>(base.m) * static_cast<double>(base.k) * e;
    Op ops[] = {gemm("lora_a", base.m, rank, base.k), gemm("lora_b", base.m, base.n, rank), memory("lora_add", 3 * out),
                gemm("lora_b_dgrad", base.m, rank, base.n), gemm("lora_b_wgrad", rank, base.n, base.m),
                gemm("lora_a_dgrad", base.m, base.k, rank), gemm("lora_a_wgrad", base.k, rank, base.m),
                memory("lora_add_bwd", 3 * in)};
    for (size_t i = 0; i < std::size(ops); ++i) {
      ops[i].graph_scope = base.graph_scope;
      (i < 3 ? forward : backward).push_back(ops[i]);
    }
  }
  w.backward.erase(std::remove_if(w.backward.begin(), w.backward.end(), frozen_weight_gradient), w.backward.end());
  w.forward.insert(w.forward.end(), forward.begin(), forward.end());
  w.backward.insert(w.backward.end(), backward.begin(), backward.end());
}

}  // namespace trainsim::lowering
