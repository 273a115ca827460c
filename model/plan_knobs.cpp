// The names of the plan knobs the model math takes (model/plan_knobs.hpp), as plan JSON and
// Megatron-Core write them.
#include "model/plan_knobs.hpp"

namespace trainsim {

namespace {
struct ModuleNames {
  RecomputeModules flag;
  const char* name;
};
constexpr ModuleNames kModuleNames[] = {{kRecomputeCoreAttn, "core_attn"}, {kRecomputeMoeAct, "moe_act"},
                                        {kRecomputeLayernorm, "layernorm"}, {kRecomputeMlp, "mlp"},
                                        {kRecomputeMoe, "moe"}, {kRecomputeSharedExperts, "shared_experts"},
                                        {kRecomputeMlaUpProj, "mla_up_proj"}};
}  // namespace

std::string recompute_modules_text(RecomputeModules modules) {
  std::string out;
  for (const ModuleNames& n : kModuleNames) {
    if ((modules & n.flag) != 0) out += (out.empty() ? "" : ",") + std::string(n.name);
  }
  return out;
}

RecomputeModules recompute_module_flag(const std::string& name) {
  for (const ModuleNames& n : kModuleNames) {
    if (name == n.name) return n.flag;
  }
  return 0;
}

const char* recompute_module_names() { return "core_attn, moe_act, layernorm, mlp, moe, shared_experts, mla_up_proj"; }

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
    case Recompute::kSelectiveOp: return "selective_op";
  }
  return "?";
}

const char* to_string(LossKernel k) {
  return k == LossKernel::kPytorch ? "pytorch" : k == LossKernel::kCompiled ? "compiled" : "fused";
}

const char* to_string(AttentionKernel k) { return k == AttentionKernel::kFlash ? "flash" : "unfused"; }

}  // namespace trainsim
