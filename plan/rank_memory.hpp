// Memory per GPU for a plan, per pipeline stage: weights, gradients and optimizer states (mixed-
// precision Adam, sharded by ZeRO), activations of the micro-batches the schedule keeps in flight,
// and ZeRO-3 gather buffers. Conventions and sources in docs/model-math.md §4.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

struct MemoryBreakdown {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double other_bytes = 0;  // ZeRO-3 gather buffers, FSDP's accumulating gradients, DeepSpeed's gradient buckets
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + other_bytes;
  }
};

struct StageMemory {
  int64_t stage = 0;
  int64_t layers = 0;
  int64_t params = 0;                  // parameters held by one rank of this stage, before ZeRO sharding
  int64_t expert_params = 0;           // of which routed experts (expert parallelism: sharded over expert_dp)
  int64_t layer_params = 0;            // of which in transformer layers (not the embedding or LM head)
  int64_t trainable_params = 0;
  double offloaded_layer_bytes = 0;    // CPU offloading: one offloaded layer's activations per micro-batch, copied each way        // of which train: all of them, or under LoRA its adapters (plan lora_rank)
  double in_flight_micro_batches = 0;  // micro-batches whose activations are alive at the peak
  MemoryBreakdown memory;
};

struct RankMemory {
  std::vector<StageMemory> stages;  // one per pipeline stage
  int64_t peak_stage = 0;           // the stage with the largest total
  const StageMemory& peak() const { return stages[static_cast<size_t>(peak_stage)]; }
};

// Bytes per parameter for weights, gradients and optimizer states at the plan's precision (and
// gradient dtype: grad_reduce_in_fp32).
struct StateBytes {
  double weights = 2, gradients = 4, optimizer = 12;
};
StateBytes state_bytes_per_param(const ParallelPlan& plan);

// LoRA's adapter parameters on one rank per transformer layer (0 without LoRA): A (in x r) and B
// (r x out) beside qkv, proj, fc1 and fc2, the side their linear splits over TP split with it.
int64_t lora_params_per_layer(const ModelSpec& model, const ParallelPlan& plan);

// DeepSpeed's contiguous gradient buckets on every rank (ZeroEngine::kDeepSpeed at ZeRO >= 1), bytes;
// 0 for Megatron-Core's and FSDP's ZeRO, whose buffers are the gradients already counted.
double deepspeed_bucket_bytes(const ParallelPlan& plan);

// ZeRO-3 / FSDP with a pipeline keeps the gathered weights from the first forward to the last
// backward and accumulates unsharded fp32 gradients, reducing them once (torchtitan's default:
// fsdp_reshard_after_forward "default" = false with pipeline parallelism; torch.distributed.
// pipelining syncs gradients on the last micro-batch only). Without a pipeline FSDP reshards.
// ZeRO-2 with a pipeline is the same thing said the other way round: Llama 3's "FSDP without
// resharding after forward" with PP (Llama 3 paper §3.3.2), FSDP2's reshard_after_forward=False:
// the weights gathered once, gradients accumulated unsharded and reduce-scattered after the last
// micro-batch, optimizer states sharded.
inline bool fsdp_layer_by_layer(const ParallelPlan& plan) { return plan.zero_stage >= 3 || (plan.zero_stage == 2 && plan.pp > 1); }
inline bool keeps_gathered_weights(const ParallelPlan& plan) { return fsdp_layer_by_layer(plan) && plan.pp > 1; }

// What the GPU changes in memory: whether a per-tensor FP8 weight also keeps a transposed copy
// for the backward's GEMMs (Hopper's FP8 tensor cores take TN layouts only; Blackwell's take any,
// Transformer Engine's nvte_is_non_tn_fp8_gemm_supported). Hopper's by default.
struct MemoryTarget {
  bool fp8_transposed_copies = true;
};

// Bytes per parameter a transformer layer's weights take on a rank without ZeRO-3: 16-bit, or
// under Transformer Engine's quantized recipes the weight with its cached quantized copy (Megatron
// passes is_first_microbatch, so the cast weight is kept across micro-batches: the row-wise layout
// and, where the backward needs one, the column-wise one), or only the quantized layouts with FP8
// primary weights (fp8_params). torchao's Float8Linear keeps no cast weight.
double layer_weight_bytes_per_param(const ParallelPlan& plan, const MemoryTarget& target);

// The plan must be valid for the model (validate_plan).
RankMemory estimate_rank_memory(const ModelSpec& model, const ParallelPlan& plan, const MemoryTarget& target = {});

// Micro-batches of activations alive on `stage` at its peak, counted in whole-stage units
// (1F1B: min(p - stage, m); GPipe: m; interleaved: Megatron's warm-up count over v chunks).
double in_flight_micro_batches(const ParallelPlan& plan, int64_t stage);

}  // namespace trainsim
