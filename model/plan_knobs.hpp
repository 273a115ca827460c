// The plan knobs the model math depends on: how activations are recomputed (and, for Megatron-
// Core's selective recomputation, which modules), which attention kernel runs, and how the loss is
// computed. They are plan choices (plan/parallel_plan.hpp holds them), declared here because the
// activation memory and FLOP counts of model/ take them as inputs; this header has no formulas.
#pragma once

#include <cstdint>
#include <string>

namespace trainsim {

// kSelective: Megatron's selective recompute (the attention core); kSelectiveOp: torchtitan's
// per-op selective checkpointing (the outputs of every other matmul and of attention are kept,
// the rest of the layer runs again in the backward); kFull: the whole layer runs again.
enum class Recompute { kNone, kSelective, kFull, kSelectiveOp };
// What Megatron-Core's selective recomputation re-runs (--recompute-modules), as bit flags:
// core_attn (its default) re-runs the attention core; layernorm and moe_act discard the output of
// the pre-MLP norm (separate from a linear only in MoE layers under Transformer Engine) and of the
// experts' activation, recomputing it for the backward; mlp, moe and shared_experts checkpoint the
// dense MLP, the whole MoE block, or the shared experts, keeping only their input.
enum RecomputeModule : uint32_t {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeLayernorm = 1u << 1,
  kRecomputeMoeAct = 1u << 2,
  kRecomputeMlp = 1u << 3,
  kRecomputeMoe = 1u << 4,
  kRecomputeSharedExperts = 1u << 5,
  // mla_up_proj: multi-head latent attention's up projections and RoPE (their Q, K and V discarded,
  // rebuilt from the kept latents before the attention backward); no effect without MLA.
  kRecomputeMlaUpProj = 1u << 6,
};
using RecomputeModules = uint32_t;
inline constexpr RecomputeModules kDefaultRecomputeModules = kRecomputeCoreAttn;
// "core_attn,moe_act"; the names Megatron-Core takes, in its order.
std::string recompute_modules_text(RecomputeModules modules);
// One module's flag by Megatron-Core's name; 0 for a name it is not.
RecomputeModules recompute_module_flag(const std::string& name);
// The names, comma-separated, for messages.
const char* recompute_module_names();
// kUnfused stores the softmax (and dropout) of the a*s^2 attention scores; kFlash (FlashAttention-
// style fused kernel) stores only the output and the fp32 log-sum-exp per row.
enum class AttentionKernel { kFlash, kUnfused };
// How the loss is computed from the logits on the last stage: kFused, Megatron's vocab-parallel
// cross entropy (an fp32 copy of the logits turned into the softmax in place); kPytorch, PyTorch's
// cross_entropy on the fp32-cast logits (torchtitan), which allocates its gradients apart.
// kCompiled: the same under torch.compile (torchtitan compiles the loss with the model since
// pytorch/torchtitan#1033, 2025-04): one fused kernel each way, keeping only the bf16 logits.
enum class LossKernel { kFused, kPytorch, kCompiled };

const char* to_string(Recompute recompute);
const char* to_string(LossKernel loss);
const char* to_string(AttentionKernel kernel);

}  // namespace trainsim
