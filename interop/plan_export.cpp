// Export to Megatron-LM, DeepSpeed and torchrun (torchtitan: interop/torchtitan_export.cpp).
#include "interop/plan_export.hpp"
#include "plan/plan_json.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "interop/torchtitan_export.hpp"
#include "plan/recompute_span.hpp"

namespace trainsim {

ExportTarget parse_export_target(const std::string& name) {
  if (name == "megatron") return ExportTarget::kMegatron;
  if (name == "deepspeed") return ExportTarget::kDeepSpeed;
  if (name == "torchrun") return ExportTarget::kTorchrun;
  if (name == "torchtitan") return ExportTarget::kTorchtitan;
  throw InputError("--to: \"" + name + "\" is not one of: megatron, deepspeed, torchrun, torchtitan");
}

namespace {

// A number as Megatron's int arguments take it (RoPE bases are whole numbers in every catalog model).
std::string whole(double v) {
  std::ostringstream out;
  if (v > 0 && v < 1e15 && v == std::floor(v)) out << static_cast<int64_t>(v);
  else out << v;
  return out.str();
}

// Megatron pads the vocabulary to a multiple of --make-vocab-size-divisible-by (default 128) x tp
// (megatron/core/tokenizers/utils/build_tokenizer.py: vocab_size_with_padding). The largest power of two up to 128 that
// leaves the model's vocabulary as it is, so that the job runs the vocabulary trainsim priced; 0 when
// tp does not divide it (Megatron then pads whatever the divisor).
int64_t vocab_divisor(const ModelSpec& m, int64_t tp) {
  constexpr int64_t kMegatronDivisor = 128;  // arguments.py: --make-vocab-size-divisible-by default
  for (int64_t d = kMegatronDivisor; d >= 1; d /= 2) {
    if (m.vocab % (d * tp) == 0) return d;
  }
  return 0;
}

std::string model_args(const ModelSpec& m, int64_t tp) {
  std::ostringstream a;
  a << "--num-layers " << m.layers << " --hidden-size " << m.hidden << " --num-attention-heads " << m.heads;
  if (m.kv_heads != m.heads) a << " --group-query-attention --num-query-groups " << m.kv_heads;
  if (m.head_dim * m.heads != m.hidden) a << " --kv-channels " << m.head_dim;
  a << " --ffn-hidden-size " << m.ffn_hidden << " --seq-length " << m.seq_len << " --max-position-embeddings "
    << m.max_positions;
  if (m.ffn_kind == FfnKind::kSwiglu) a << " --swiglu";
  if (m.norm == NormKind::kRmsNorm) a << " --normalization RMSNorm";
  if (m.position == PositionKind::kRope) a << " --position-embedding-type rope --rotary-base " << whole(m.rope_theta);
  if (!m.tied_embeddings) a << " --untie-embeddings-and-output-weights";
  if (!m.linear_bias) a << " --disable-bias-linear";
  if (!m.linear_bias && m.qkv_bias) a << " --add-qkv-bias";
  if (vocab_divisor(m, tp) > 0) a << " --make-vocab-size-divisible-by " << vocab_divisor(m, tp);
  if (m.moe) {
    a << " \\\n  --num-experts " << m.moe->experts << " --moe-router-topk " << m.moe->top_k << " --moe-ffn-hidden-size "
      << m.moe->expert_ffn_hidden << " --moe-grouped-gemm";
    if (m.moe->shared_experts > 0) a << " --moe-shared-expert-intermediate-size " << m.moe->shared_experts * m.moe->expert_ffn_hidden;
    // Megatron-LM's per-layer pattern: 0 a dense layer, 1 an MoE one.
    if (m.moe->dense_layers > 0) a << " --moe-layer-freq '([0]*" << m.moe->dense_layers << "+[1]*" << m.moe_layers() << ")'";
  }
  if (m.mtp_layers > 0) a << " --mtp-num-layers " << m.mtp_layers;
  if (m.mla) {
    a << " \\\n  --multi-latent-attention";
    if (m.mla->q_lora_rank > 0) a << " --q-lora-rank " << m.mla->q_lora_rank;
    a << " --kv-lora-rank " << m.mla->kv_lora_rank << " --qk-head-dim " << m.mla->qk_nope_head_dim << " --qk-pos-emb-head-dim "
      << m.mla->qk_rope_head_dim << " --v-head-dim " << m.mla->v_head_dim;
  }
  a << " \\\n  ";
  return a.str();
}

// What the exported arguments leave to the user, as shell comments above them: the data, the
// tokenizer, the learning-rate schedule and the checkpoints, which change no iteration's time; and
// the kernels priced.
std::string launch_comment(const ModelSpec* m, const ParallelPlan& p) {
  std::ostringstream c;
  c << "# trainsim: add what these arguments leave out (none changes an iteration's time): the data (--data-path, or\n"
       "# --mock-data), the tokenizer (--tokenizer-type, --tokenizer-model), the schedule (--train-iters or\n"
       "# --train-samples, --lr, --min-lr, --lr-decay-style, --lr-warmup-iters) and the checkpoints (--save, --load).\n";
  c << "# Attention priced as " << (p.attention == AttentionKernel::kFlash ? "Transformer Engine's cuDNN fused attention (--attention-backend fused)"
                                                                        : "unfused attention (--attention-backend unfused)")
    << ".\n";
  if (m == nullptr) c << "# Without --model: add the model's arguments (layers, widths, heads, norm, positions, RoPE base).\n";
  if (p.lora_rank > 0) {
    c << "# LoRA rank " << p.lora_rank << " was priced: these arguments train every weight; LoRA is set in the\n"
         "# framework's fine-tuning config (Megatron-Bridge: peft=LoRA(dim=" << p.lora_rank << "), target_modules qkv, proj, fc1, fc2).\n";
  }
  if (m != nullptr && vocab_divisor(*m, p.tp) == 0) {
    c << "# Megatron pads the vocabulary (" << m->vocab << ") to a multiple of --make-vocab-size-divisible-by x tp (" << p.tp
      << "); trainsim priced it unpadded.\n";
  }
  return c.str();
}

// How Megatron-Core places the layers: an even split, explicit first/last-stage counts, or the
// embedding and loss counted as layers; any other remainder it cannot express.
std::string pipeline_split_args(const ModelSpec& m, const ParallelPlan& p) {
  std::ostringstream a;
  const int64_t stages = p.pp * p.vpp;
  if (!p.pipeline_layout.empty()) {
    // Megatron-Core's layout string: E the embedding, t a layer, m an MTP depth, L the loss; | between stages.
    a << " --pipeline-model-parallel-layout '";
    for (size_t vs = 0; vs < p.pipeline_layout.size(); ++vs) {
      if (vs > 0) a << "|";
      if (vs == 0) a << "E";
      const int64_t n = p.pipeline_layout[vs];
      if (n == 1) a << "t";
      else if (n > 1) a << "t*" << n;
      if (vs + 1 == p.pipeline_layout.size()) a << std::string(static_cast<size_t>(m.mtp_layers), 'm') << "L";
    }
    a << "'";
    return a.str();
  }
  const bool explicit_ends = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  if (p.first_stage_layers > 0) a << " --decoder-first-pipeline-num-layers " << p.first_stage_layers;
  if (p.last_stage_layers > 0) a << " --decoder-last-pipeline-num-layers " << p.last_stage_layers;
  if (!explicit_ends && m.layers % stages != 0) {
    if ((m.layers + 2) % stages != 0) {
      throw InputError("export: pp x vpp (" + std::to_string(stages) + ") divides neither the layers (" +
                           std::to_string(m.layers) + ") nor the layers + 2 (embedding and loss counted as layers)",
                       "set --first-stage-layers / --last-stage-layers, or a pp and vpp that divide the layers");
    }
    a << " --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split";
  }
  if (p.vpp > 1 && (explicit_ends || m.layers % stages != 0)) a << " --num-virtual-stages-per-pipeline-rank " << p.vpp;
  else if (p.vpp > 1) a << " --num-layers-per-virtual-pipeline-stage " << m.layers / stages;
  return a.str();
}

std::string megatron_args(const ModelSpec* model, const ParallelPlan& p) {
  if (p.zero_stage == 2) {
    throw InputError("export: Megatron-LM has no ZeRO-2 (its distributed optimizer is ZeRO-1, FSDP is ZeRO-3)",
                     "export to deepspeed, or choose ZeRO-1 or ZeRO-3");
  }
  if (is_zero_bubble(p.schedule)) {
    throw InputError(std::string("export: Megatron-LM has no Zero Bubble schedule (") + to_string(p.schedule) + ")",
                     "the authors' fork (sail-sg/zero-bubble-pipeline-parallelism) takes --enable-zero-bubble "
                     "--zero-bubble-max-pending-backward; or export the 1f1b / interleaved schedule");
  }
  if (p.recompute == Recompute::kSelectiveOp) {
    throw InputError("export: Megatron-LM has no per-op selective checkpointing (recompute selective_op)",
                     "export --recompute selective (the attention core) or full");
  }
  if (p.recompute == Recompute::kFull && p.recompute_method == RecomputeMethod::kEvery && p.recompute_layers > 1) {
    throw InputError("export: Megatron-LM has no every-N-th-layer recomputation (recompute_method every " + std::to_string(p.recompute_layers) +
                         ": torchtitan's selective_ac_option)",
                     "export --to torchtitan, or use --recompute-method block --recompute-num-layers N (the first N layers of each chunk: the same memory and time)");
  }
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kRowwise) {
    throw InputError("export: Megatron-LM has no row-wise FP8 scaling (fp8_recipe rowwise is torchao's; Megatron's "
                     "--fp8-recipe is delayed, tensorwise, mxfp8 or blockwise)",
                     "export --to torchtitan, or predict with --fp8-recipe delayed");
  }
  if (p.vpp > 1 && model == nullptr) {
    throw InputError("export: interleaving (vpp " + std::to_string(p.vpp) + ") is written as layers per virtual stage",
                     "give --model so the layer count is known");
  }
  std::ostringstream a;
  if (model != nullptr) a << model_args(*model, p.tp);
  a << "--tensor-model-parallel-size " << p.tp << " --pipeline-model-parallel-size " << p.pp;
  if (p.cp > 1) a << " --context-parallel-size " << p.cp;
  if (p.cp > 1 && p.cp_comm != CpComm::kP2p) a << " --cp-comm-type " << to_string(p.cp_comm);
  if (p.ep > 1) a << " --expert-model-parallel-size " << p.ep;
  if (p.ep > 1 || p.expert_tp > 0) a << " --expert-tensor-parallel-size " << p.expert_tp_size();
  if ((model != nullptr && model->moe) || p.moe_dispatcher != MoeDispatcher::kAllToAll) a << " --moe-token-dispatcher-type " << to_string(p.moe_dispatcher);
  if (p.moe_capacity_factor > 0) a << " --moe-expert-capacity-factor " << p.moe_capacity_factor;
  if (model != nullptr) a << pipeline_split_args(*model, p);
  if (p.sequence_parallel) a << " --sequence-parallel";
  a << " \\\n  --micro-batch-size " << p.micro_batch << " --global-batch-size " << p.global_batch;
  if (p.recompute == Recompute::kSelective) a << " --recompute-granularity selective";
  if (p.recompute == Recompute::kSelective && p.recompute_modules != kDefaultRecomputeModules) {
    a << " --recompute-modules";
    for (const std::string& name : recompute_module_list(p.recompute_modules)) a << " " << name;
  }
  if (p.recompute == Recompute::kFull) {
    const RecomputeMethod method = p.recompute_method == RecomputeMethod::kEvery ? RecomputeMethod::kUniform : p.recompute_method;  // every 1
    a << " --recompute-granularity full --recompute-method " << to_string(method) << " --recompute-num-layers " << p.recompute_layers;
  }
  if (p.zero_stage == 1) a << " --use-distributed-optimizer";
  if (p.zero_stage == 3) a << " --use-torch-fsdp2";
  if (p.precision == Precision::kBf16) a << " --bf16";
  if (p.precision == Precision::kFp16) a << " --fp16";
  // Block scaling takes E4M3 throughout (Megatron-Bridge's subchannel recipe: fp8 "e4m3").
  if (p.precision == Precision::kFp8) a << " --bf16 --fp8-format " << (p.fp8_recipe == Fp8Recipe::kBlockwise ? "e4m3" : "hybrid");
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kTensorwise) a << " --fp8-recipe tensorwise";
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kBlockwise) a << " --fp8-recipe blockwise";
  if (p.precision == Precision::kMxfp8) a << " --bf16 --fp8-format e4m3 --fp8-recipe mxfp8";
  if (p.precision == Precision::kNvfp4) a << " --bf16 --fp4-format e2m1 --fp4-recipe nvfp4";
  // The kernel priced: Megatron-Core's AttnBackend (megatron/core/transformer/enums.py) through
  // Transformer Engine; fused is cuDNN's (sim/reference_efficiency.cpp prices it on Hopper).
  // A plan issued by PyTorch's modules (host_stack pytorch) runs Megatron's local layers, flash
  // attention through --use-flash-attn.
  if (p.host_stack == HostStack::kPytorch) {
    a << " --transformer-impl local" << (p.attention == AttentionKernel::kFlash ? " --use-flash-attn" : "");
  } else {
    a << " --transformer-impl transformer_engine --attention-backend " << (p.attention == AttentionKernel::kFlash ? "fused" : "unfused");
  }
  if (p.tp_comm_overlap) a << " --tp-comm-overlap";
  if (p.ep_comm_overlap) a << " --overlap-moe-expert-parallel-comm";
  // CUDA graphs: Megatron-LM's --cuda-graph-impl and --cuda-graph-modules (no modules: whole layers).
  if ((p.cuda_graphs & kGraphFullIteration) != 0) {
    a << " --cuda-graph-impl full_iteration";
  } else if (p.cuda_graphs != 0) {
    a << " --cuda-graph-impl transformer_engine";
    if ((p.cuda_graphs & kGraphLayer) == 0) {
      a << " --cuda-graph-modules";
      for (CudaGraphs flag = 1; flag < kGraphLayer; flag <<= 1) {
        if ((p.cuda_graphs & flag) != 0) a << " " << cuda_graphs_text(flag);
      }
    }
  }
  if (p.fp8_params && fp8_family(p.precision)) a << " --fp8-param-gather";
  if (!p.grad_reduce_in_fp32 && p.precision != Precision::kFp32) a << " --grad-reduce-in-bf16";
  if (!p.softmax_fusion) a << " --no-masked-softmax-fusion";
  if (!p.bias_gelu_fusion) a << " --no-bias-gelu-fusion";
  if (p.te_op_fuser) a << " --use-transformer-engine-op-fuser";
  if (p.cpu_offload_layers > 0) a << " --cpu-offloading-num-layers " << p.cpu_offload_layers;
  if (p.dp_overlap) a << " --overlap-grad-reduce";
  return a.str();
}

std::string deepspeed_config(const ParallelPlan& p) {
  if (p.tp > 1 || p.pp > 1) {
    throw InputError("export: a DeepSpeed config cannot express tp " + std::to_string(p.tp) + " / pp " + std::to_string(p.pp) +
                         " (Megatron-DeepSpeed takes them as Megatron arguments)",
                     "export to megatron for this plan");
  }
  if (is_partial_recompute(p)) {
    throw InputError(std::string("export: a DeepSpeed config cannot say which layers are recomputed (recompute full, ") + to_string(p.recompute_method) +
                         " " + std::to_string(p.recompute_layers) + "): the model code checkpoints them",
                     "export to megatron (--recompute-method / --recompute-num-layers), or use recompute full with uniform 1");
  }
  nlohmann::ordered_json j;
  j["train_batch_size"] = p.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.micro_batch;
  j["gradient_accumulation_steps"] = p.micro_batches();
  j["zero_optimization"] = {{"stage", p.zero_stage}, {"overlap_comm", p.dp_overlap}};
  j["bf16"] = {{"enabled", p.precision == Precision::kBf16 || quantized_linears(p.precision)}};
  j["fp16"] = {{"enabled", p.precision == Precision::kFp16}};
  if (p.recompute != Recompute::kNone) {
    j["activation_checkpointing"] = {{"partition_activations", false}, {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  }
  return j.dump(2) + "\n";
}

}  // namespace

std::string export_plan(const ModelSpec* m, const ParallelPlan& p, int64_t gpus_per_node, ExportTarget target) {
  switch (target) {
    case ExportTarget::kMegatron: return launch_comment(m, p) + megatron_args(m, p) + "\n";
    case ExportTarget::kDeepSpeed: return deepspeed_config(p);
    case ExportTarget::kTorchtitan: {
      if (m == nullptr) {
        throw InputError("export --to torchtitan needs the model (its sequence length, flavor and pipeline split)",
                         "give --model");
      }
      return export_torchtitan(*m, p, gpus_per_node);
    }
    case ExportTarget::kTorchrun: {
      const int64_t per_node = std::min(gpus_per_node, p.gpus());
      const int64_t nodes = (p.gpus() + per_node - 1) / per_node;
      const std::string args = megatron_args(m, p);
      return launch_comment(m, p) + "# torchrun, on every node:\ntorchrun --nnodes " + std::to_string(nodes) + " --nproc-per-node " +
             std::to_string(per_node) + " --rdzv-backend c10d --rdzv-endpoint $MASTER_ADDR:29500 \\\n  pretrain_gpt.py " +
             args + "\n# or under Slurm:\nsrun --nodes " + std::to_string(nodes) + " --ntasks-per-node " +
             std::to_string(per_node) + " --gpus-per-node " + std::to_string(per_node) + " python pretrain_gpt.py " + args +
             "\n";
    }
  }
  return {};
}

}  // namespace trainsim
