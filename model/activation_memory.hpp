// Activation memory stored for the backward pass, per transformer layer and per micro-batch on
// one tensor-parallel rank: Korthikanti et al. 2022 §4 (Table 2), generalised term by term to GQA,
// SwiGLU, any FFN width, dropout on/off, fused (flash) attention and the value width in bytes.
// docs/model-math.md §3 has the derivation; with GPT shapes it reduces to Table 2 exactly.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_spec.hpp"

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
};
using RecomputeModules = uint32_t;
inline constexpr RecomputeModules kDefaultRecomputeModules = kRecomputeCoreAttn;
// "core_attn,moe_act"; the names Megatron-Core takes, in its order.
std::string recompute_modules_text(RecomputeModules modules);
// One module's flag by Megatron-Core's name; 0 for a name it is not.
RecomputeModules recompute_module_flag(const std::string& name);
// The names, comma-separated, for messages.
const char* recompute_module_names();
// How the loss is computed from the logits on the last stage: kFused, Megatron's vocab-parallel
// cross entropy (an fp32 copy of the logits turned into the softmax in place); kPytorch, PyTorch's
// cross_entropy on the fp32-cast logits (torchtitan), which allocates its gradients apart.
// kUnfused stores the softmax (and dropout) of the a*s^2 attention scores; kFlash (FlashAttention-
// style fused kernel) stores only the output and the fp32 log-sum-exp per row.
enum class AttentionKernel { kFlash, kUnfused };
// kCompiled: the same under torch.compile (torchtitan compiles the loss with the model since
// pytorch/torchtitan#1033, 2025-04): one fused kernel each way, keeping only the bf16 logits.
enum class LossKernel { kFused, kPytorch, kCompiled };

struct ActivationLayout {
  int64_t micro_batch = 1;
  int64_t tp = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  AttentionKernel attention = AttentionKernel::kFlash;
  double bytes_per_value = 2;  // 2 for bf16/fp16 activations, 4 for fp32
  LossKernel loss = LossKernel::kFused;
  int64_t cp = 1;  // context-parallel ranks sharing each sequence
  // MoE: routed token copies this rank's experts keep over the balanced mean (the busiest EP
  // rank's, ParallelPlan::expert_rank_load); shared experts always see every token once.
  double expert_load = 1.0;
  RecomputeModules recompute_modules = kDefaultRecomputeModules;  // with recompute kSelective
};

// One transformer layer, one micro-batch, one TP rank.
double activation_bytes_per_layer(const ModelSpec& model, const ActivationLayout& layout);
// Kept on the first pipeline stage per micro-batch: the embedding's dropout mask.
double activation_bytes_embedding(const ModelSpec& model, const ActivationLayout& layout);
// Kept on the last stage per micro-batch: final-norm input, LM-head input, fp32 logits.
double activation_bytes_output(const ModelSpec& model, const ActivationLayout& layout);

// Working memory beside the stored activations, for one micro-batch at a time: while a layer is
// recomputed for its backward, the activations recomputation dropped (one layer); while the loss
// is computed on the last stage, what the loss kernel allocates beyond the stored fp32 logits.
// Full recompute in groups (Megatron-Core's uniform N) rebuilds `group_layers` layers at once:
// all their activations but the group's stored input; 0 layers need none.
double recompute_working_bytes(const ModelSpec& model, const ActivationLayout& layout, int64_t group_layers = 1);
double loss_working_bytes(const ModelSpec& model, const ActivationLayout& layout);

const char* to_string(Recompute recompute);
const char* to_string(LossKernel loss);
const char* to_string(AttentionKernel kernel);

}  // namespace trainsim
