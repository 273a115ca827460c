// Activation memory stored for the backward pass, per transformer layer and per micro-batch on
// one tensor-parallel rank: Korthikanti et al. 2022 §4 (Table 2), generalised term by term to GQA,
// SwiGLU, any FFN width, dropout on/off, fused (flash) attention and the value width in bytes.
// docs/model-math.md §3 has the derivation; with GPT shapes it reduces to Table 2 exactly.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_spec.hpp"
#include "model/plan_knobs.hpp"  // Recompute, RecomputeModules, AttentionKernel, LossKernel

namespace trainsim {

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
  // Quantized linear layers (FP8, MXFP8, NVFP4 through Transformer Engine): the bytes per value
  // of the copy a linear keeps of its input for the weight gradient (its quantized data and
  // scales), and whether the recipe is delayed scaling (Megatron-Core then cannot make the
  // attention output projection and the shared experts keep their 16-bit input instead).
  // 0: the linears keep their 16-bit input (bf16 training, torchao's Float8Linear).
  double quantized_input_bytes = 0;
  bool delayed_scaling = false;
  // MoE with a clamped GLU run by Megatron-Core's experts (plan/moe_lowering.cpp, the eager clamp):
  // the clamped copy of fc1's output (2f per routed copy), which the activation keeps, beside fc1's
  // output, which the clamp's backward keeps. Recomputing moe_act keeps neither.
  bool eager_glu_clamp = false;
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

}  // namespace trainsim
