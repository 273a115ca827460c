// Per-stage memory; docs/model-math.md §4 gives each rule and its source.
#include "plan/rank_memory.hpp"

#include <algorithm>

#include "model/activation_memory.hpp"
#include "model/param_count.hpp"
#include "plan/rank_grid.hpp"
#include "plan/recompute_span.hpp"

namespace trainsim {

StateBytes state_bytes_per_param(const ParallelPlan& plan) {
  // Mixed precision (Micikevicius et al. 2018; Megatron-LM): 16-bit weights, fp32 main gradients,
  // fp32 master weights + Adam m and v = 2 + 4 + 12 = 18 bytes per parameter, which reproduces
  // Korthikanti et al. 2022 Fig. 1. fp8 training keeps 16-bit weights (Transformer Engine casts
  // to fp8 per GEMM). Pure fp32: 4 + 4 + 8 (no master copy). Gradients reduced in the 16-bit
  // dtype (grad_reduce_in_fp32 off) take 2 bytes in the buffer.
  if (plan.precision == Precision::kFp32) return {4, 4, 8};
  return {2, plan.grad_reduce_in_fp32 ? 4.0 : 2.0, 12};
}

double in_flight_micro_batches(const ParallelPlan& p, int64_t stage) {
  const double m = static_cast<double>(p.micro_batches());
  switch (p.schedule) {
    case Schedule::kGpipe: return m;
    case Schedule::k1F1B: return std::min(static_cast<double>(p.pp - stage), m);
    // Zero Bubble's scheduler keeps at most k x pp micro-batches' activations pending on every
    // stage (ZB-1p: k 1, 1F1B's first stage; ZB-2p: k 2; --zero-bubble-max-pending-backward),
    // counting what a split backward keeps for its weight gradient; later stages fill it with
    // deferred W passes.
    case Schedule::kZeroBubble1p: return std::min(static_cast<double>(p.pp), m);
    case Schedule::kZeroBubble2p: return std::min(static_cast<double>(2 * p.pp), m);
    // ZB-V keeps every rank at 1F1B's first-stage peak: 2pp chunk forwards of half a stage each
    // (Qi et al. 2024 §6; zbv.py's max_mem = 2 x n_stage x f_mem).
    case Schedule::kZeroBubbleV: return std::min(static_cast<double>(p.pp), m);
    case Schedule::kInterleaved: {
      // Megatron-LM interleaved 1F1B: (p - stage - 1) * 2 + (v - 1) * p warm-up chunk forwards,
      // plus the one in steady state, each chunk holding 1/v of the stage's layers.
      // With m == p Megatron runs every forward as warm-up, so all m*v chunks are alive.
      const double chunks = p.micro_batches() == p.pp ? m * static_cast<double>(p.vpp)
                                                      : static_cast<double>((p.pp - stage - 1) * 2 + (p.vpp - 1) * p.pp + 1);
      return std::min(chunks, m * static_cast<double>(p.vpp)) / static_cast<double>(p.vpp);
    }
  }
  return m;
}

double deepspeed_bucket_bytes(const ParallelPlan& plan) {
  if (plan.zero_engine != ZeroEngine::kDeepSpeed || plan.zero_stage < 1 || !plan.deepspeed_contiguous_gradients) return 0.0;
  // DeepSpeed's contiguous_gradients (default True) copies each gradient into a bucket of
  // reduce_bucket_size elements (5e8 by default, deepspeed/runtime/zero/config.py) in the 16-bit
  // dtype, allocated whole: ZeRO-3 keeps one (stage3.py); ZeRO-1/2 one, and a second to swap with
  // when overlap_comm is on (stage_1_and_2.py setup_buckets), one appended by reduce_gradients
  // under DeepSpeed's pipeline engine (whose backward runs outside ZeRO).
  const double value_bytes = plan.precision == Precision::kFp32 ? 4.0 : 2.0;
  const double buckets = plan.zero_stage >= 3 || plan.pp > 1 || !plan.dp_overlap ? 1.0 : 2.0;
  return buckets * plan.deepspeed_reduce_bucket * value_bytes;
}

double layer_weight_bytes_per_param(const ParallelPlan& plan, const MemoryTarget& target) {
  const double layout = quantized_input_bytes(plan);  // one quantized layout, per value
  if (layout <= 0.0 || plan.zero_stage >= 3) return state_bytes_per_param(plan).weights;
  // Per-tensor FP8 needs the transposed copy only where the GEMMs take TN layouts; the block-scaled
  // recipes (blockwise, MXFP8, NVFP4) quantize the column-wise layout on its own blocks either way.
  const bool per_tensor = plan.precision == Precision::kFp8 && plan.fp8_recipe != Fp8Recipe::kBlockwise;
  const double copies = per_tensor && !target.fp8_transposed_copies ? 1.0 : 2.0;
  const bool primary = plan.fp8_params && fp8_family(plan.precision);
  return (primary ? 0.0 : state_bytes_per_param(plan).weights) + copies * layout;
}

int64_t lora_params_per_layer(const ModelSpec& m, const ParallelPlan& p) {
  if (p.lora_rank <= 0) return 0;
  const int64_t t = p.tp, h = m.hidden, q = m.attention_width(), kv = m.kv_width();
  const int64_t up = (m.ffn_kind == FfnKind::kSwiglu ? 2 : 1) * m.ffn_hidden;
  // Column-parallel qkv and fc1: A whole, B split; row-parallel proj and fc2: A split, B whole.
  return p.lora_rank * ((h + (q + 2 * kv) / t) + (q / t + h) + (h + up / t) + (m.ffn_hidden / t + h));
}

namespace {

// Weights, gradients and optimizer states of a stage's parameters, sharded as the ZeRO stage says.
// ZeRO shards over the data-parallel ranks of every CP rank (Megatron's dp_cp group, torchtitan's
// dp_shard_cp mesh; with HSDP the shard group only), routed experts over the ranks holding the
// same experts.
void set_state_bytes(const ParallelPlan& plan, StageMemory& s, int64_t layer_on_rank, const MemoryTarget& target) {
  const StateBytes bytes = state_bytes_per_param(plan);
  const double dp = static_cast<double>(plan.shard_ranks()), expert_dp_ranks = static_cast<double>(expert_dp(plan));
  const double dense = static_cast<double>(s.params - s.expert_params), experts = static_cast<double>(s.expert_params);
  const auto state = [&](double bytes_per_param, bool sharded) {
    return dense * bytes_per_param / (sharded ? dp : 1.0) + experts * bytes_per_param / (sharded ? expert_dp_ranks : 1.0);
  };
  s.memory.weights_bytes = state(bytes.weights, plan.zero_stage >= 3 && !keeps_gathered_weights(plan));
  // The layers' quantized weight copies (or FP8 primary weights in place of the 16-bit ones).
  s.memory.weights_bytes += static_cast<double>(s.layer_params) * (layer_weight_bytes_per_param(plan, target) - bytes.weights);
  s.memory.gradients_bytes = state(bytes.gradients, plan.zero_stage >= 2);
  s.memory.optimizer_bytes = state(bytes.optimizer, plan.zero_stage >= 1);
  if (s.trainable_params < s.params) {  // LoRA: only the adapters have gradients and optimizer states (no experts: refused)
    const double trainable = static_cast<double>(s.trainable_params);
    s.memory.gradients_bytes = trainable * bytes.gradients / (plan.zero_stage >= 2 ? dp : 1.0);
    s.memory.optimizer_bytes = trainable * bytes.optimizer / (plan.zero_stage >= 1 ? dp : 1.0);
  }
  if (keeps_gathered_weights(plan)) {
    // The unsharded gradients being accumulated, in FSDP2's reduce dtype (fp32 in torchtitan's
    // default mixed_precision_reduce): FSDPParam.to_accumulated_grad_if_needed upcasts each
    // micro-batch's 16-bit gradient and adds the next ones to it until the last backward.
    s.memory.other_bytes = state(bytes.gradients, false);
  } else if (plan.zero_stage >= 3) {
    // ZeRO-3 gathers a layer's full weights before use and prefetches the next: two layers live.
    s.memory.other_bytes = 2.0 * static_cast<double>(layer_on_rank) * bytes.weights;
  }
  s.memory.other_bytes += deepspeed_bucket_bytes(plan);
}

// Activations one micro-batch leaves on a stage for its backward: layers at the plan's recompute
// size (with uniform N one per group: its input), and the layers block recompute leaves whole.
double stored_layer_bytes(const ModelSpec& m, const ActivationLayout& act, const RecomputeSpan& span) {
  ActivationLayout whole = act;
  whole.recompute = Recompute::kNone;
  return activation_bytes_per_layer(m, act) * static_cast<double>(span.checkpointed) +
         activation_bytes_per_layer(m, whole) * static_cast<double>(span.whole_layers);
}

// What the activation terms of model/activation_memory.hpp need of the plan.
ActivationLayout activation_layout(const ParallelPlan& plan) {
  ActivationLayout act;
  act.micro_batch = plan.micro_batch;
  act.tp = plan.tp;
  act.sequence_parallel = plan.sequence_parallel;
  act.recompute = plan.recompute;
  act.recompute_modules = plan.recompute_modules;
  act.attention = plan.attention;
  act.loss = plan.cross_entropy;
  act.cp = plan.cp;
  act.expert_load = plan.expert_rank_load();
  act.bytes_per_value = plan.precision == Precision::kFp32 ? 4 : 2;
  act.quantized_input_bytes = quantized_input_bytes(plan);
  act.delayed_scaling = plan.precision == Precision::kFp8 && plan.fp8_recipe == Fp8Recipe::kDelayed;
  return act;
}

// The multi-token-prediction depths beside their layers, on the last stage: per depth eh_proj (2h x
// h, column-parallel) and three norms, and the word embedding the depths look the shifted tokens up
// in (Megatron-Core builds it on the MTP stage; a tied model, or a stage that is also the first,
// holds it already) added to `s`; returned, the activations each micro-batch keeps: the enorm and
// hnorm inputs, eh_proj's 2h-wide input (4 hidden-wide tensors), and the second head's own (its
// final-norm input, LM-head input, logits).
double add_mtp_depths(const ModelSpec& model, const ParallelPlan& plan, const ActivationLayout& act, const ParamCounts& params,
                      bool apart_from_embedding, StageMemory& s) {
  if (model.mtp_layers <= 0) return 0.0;
  s.params += model.mtp_layers * (2 * model.hidden * model.hidden / plan.tp + 3 * params.final_norm);
  if (apart_from_embedding && !model.tied_embeddings) s.params += params.token_embedding / plan.tp;
  const double sp_split = plan.sequence_parallel ? static_cast<double>(plan.tp) : 1.0;
  const double hidden_bytes = act.bytes_per_value * static_cast<double>(plan.micro_batch) *
                              static_cast<double>(model.seq_len / plan.cp) * static_cast<double>(model.hidden) / sp_split;
  return static_cast<double>(model.mtp_layers) * (4.0 * hidden_bytes + activation_bytes_output(model, act));
}

}  // namespace

RankMemory estimate_rank_memory(const ModelSpec& model, const ParallelPlan& plan, const MemoryTarget& target) {
  const ParamCounts params = count_params(model);
  // Norms, row-parallel biases (attention output, FFN down) and the MoE router are replicated over
  // tensor-parallel ranks, and so are MLA's down projections and latent norms (Megatron-Core builds
  // them duplicated); everything else in a layer is split t ways (Shoeybi et al. 2019). An MoE model's
  // dense first layers hold a dense FFN instead of experts (ModelSpec: MoeSpec::dense_layers); their
  // activations are taken as an MoE layer's.
  const int64_t layer_replicated = params.per_layer.norms + params.per_layer.router + params.per_layer.attention_replicated +
                                   (model.linear_bias ? 2 * model.hidden : 0);
  // Routed experts apart from the dense TP split (expert parallelism, or an expert TP other than
  // TP): a rank holds experts / ep of them, each split expert_tp ways, their states sharded over
  // the ranks holding the same slices.
  const bool experts_apart = model.moe && !plan.experts_like_dense();
  const int64_t layer_experts = experts_apart ? params.per_layer.mlp / (plan.ep * plan.expert_tp_size()) : 0;
  const int64_t layer_split = params.per_layer.total() - layer_replicated - (experts_apart ? params.per_layer.mlp : 0);
  const int64_t layer_on_rank = layer_split / plan.tp + layer_replicated + layer_experts;
  const int64_t embedding_on_rank = params.token_embedding / plan.tp;  // vocab-parallel
  // An MoE model's dense first layers: the same attention, a dense FFN split over TP, no router.
  const int64_t dense_replicated = params.dense_layer.norms + params.dense_layer.attention_replicated + (model.linear_bias ? 2 * model.hidden : 0);
  const int64_t dense_on_rank = (params.dense_layer.total() - dense_replicated) / plan.tp + dense_replicated;

  ActivationLayout act = activation_layout(plan);
  act.eager_glu_clamp = eager_glu_clamp(model, plan);
  RankMemory result;
  const bool v_shape = v_placement(plan.schedule);
  const int64_t head_stage = place_of_virtual_stage(v_shape, plan.pp, plan.pp * plan.vpp - 1).stage;
  const std::vector<int64_t> stage_layers = virtual_stage_layers(model, plan);
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    StageMemory s;
    s.stage = stage;
    RecomputeSpan span;  // stage_recompute_span, from the layers split once
    for (int64_t c = 0; c < plan.vpp; ++c) {
      const int64_t chunk_layers = layers_run_by(stage_layers, model, plan, virtual_stage_at(v_shape, plan.pp, stage, c));
      s.layers += chunk_layers;
      span += chunk_recompute_span(plan, chunk_layers);
    }
    int64_t dense = 0;  // of the stage's layers, the model's dense first ones
    for (int64_t c = 0; c < plan.vpp; ++c) dense += dense_layers_of_chunk(model, plan, stage, c);
    s.params = (s.layers - dense) * layer_on_rank + dense * dense_on_rank;
    s.expert_params = (s.layers - dense) * layer_experts;
    s.layer_params = s.params;
    s.trainable_params = s.layers * lora_params_per_layer(model, plan);
    s.params += s.trainable_params;
    s.in_flight_micro_batches = in_flight_micro_batches(plan, stage);
    double activations = stored_layer_bytes(model, act, span) * s.in_flight_micro_batches;
    // CPU offloading leaves (layers - N) layers' activations on the GPU (Transformer Engine's
    // get_cpu_offload_context: "activation memory usage is equal to (num_layers -
    // num_offloaded_layers) * T"); the plan has pp 1 and no recomputation.
    if (plan.cpu_offload_layers > 0 && s.layers > 0) {
      s.offloaded_layer_bytes = activations / static_cast<double>(s.layers);
      activations *= static_cast<double>(std::max<int64_t>(0, s.layers - plan.cpu_offload_layers)) / static_cast<double>(s.layers);
    }
    if (stage == 0) {
      s.params += embedding_on_rank + params.position_embedding;
      activations += activation_bytes_embedding(model, act) * s.in_flight_micro_batches;
    }
    if (stage == head_stage) {
      // The LM head: its own matrix, or (tied, pp > 1) Megatron's copy of the word embedding.
      s.params += params.final_norm;
      if (!model.tied_embeddings) s.params += params.lm_head / plan.tp;
      else if (head_stage != 0) s.params += embedding_on_rank;  // with the V, the first rank holds both
      const double head_in_flight = plan.schedule == Schedule::kGpipe ? s.in_flight_micro_batches : 1.0;
      activations += activation_bytes_output(model, act) * head_in_flight;
      activations += add_mtp_depths(model, plan, act, params, head_stage != 0, s) * head_in_flight;
    }
    // Beside the stored activations, one micro-batch's working memory at a time: a layer (uniform
    // N: a group) being recomputed for its backward, or (last stage) the loss being computed.
    double working = recompute_working_bytes(model, act, span.group_layers);
    if (stage == head_stage) working = std::max(working, loss_working_bytes(model, act));
    activations += working;
    if (plan.lora_rank <= 0) s.trainable_params = s.params;
    set_state_bytes(plan, s, layer_on_rank, target);
    s.memory.activations_bytes = activations;
    result.stages.push_back(s);
  }
  for (const auto& s : result.stages) {
    if (s.memory.total_bytes() > result.peak().memory.total_bytes()) result.peak_stage = s.stage;
  }
  return result;
}

}  // namespace trainsim
