// The table of known Megatron-LM flags (megatron/training/arguments.py and the config dataclasses
// its arguments are generated from, NVIDIA/Megatron-LM@d98e8a6; torchrun's and srun's flags).
#include "interop/megatron_flags.hpp"

#include <map>

namespace trainsim {

namespace {

using Kind = MegatronFlagKind;

struct Entry {
  const char* name;
  Kind kind;
  bool is_switch;
  const char* why;
};

// Flags the plan or the model check reads (interop/megatron_import.cpp).
const Entry kRead[] = {
    {"--tensor-model-parallel-size", Kind::kRead, false, ""}, {"--pipeline-model-parallel-size", Kind::kRead, false, ""},
    {"--context-parallel-size", Kind::kRead, false, ""}, {"--expert-model-parallel-size", Kind::kRead, false, ""},
    {"--expert-tensor-parallel-size", Kind::kRead, false, ""}, {"--num-layers-per-virtual-pipeline-stage", Kind::kRead, false, ""},
    {"--num-virtual-stages-per-pipeline-rank", Kind::kRead, false, ""}, {"--decoder-first-pipeline-num-layers", Kind::kRead, false, ""},
    {"--decoder-last-pipeline-num-layers", Kind::kRead, false, ""}, {"--micro-batch-size", Kind::kRead, false, ""},
    {"--global-batch-size", Kind::kRead, false, ""}, {"--recompute-granularity", Kind::kRead, false, ""},
    {"--recompute-method", Kind::kRead, false, ""}, {"--recompute-num-layers", Kind::kRead, false, ""},
    {"--recompute-modules", Kind::kRead, false, ""}, {"--recompute-activations", Kind::kRead, true, ""},
    {"--checkpoint-activations", Kind::kRead, true, ""}, {"--checkpoint-num-layers", Kind::kRead, false, ""},
    {"--fp8-format", Kind::kRead, false, ""}, {"--transformer-impl", Kind::kRead, false, ""},
    {"--attention-backend", Kind::kRead, false, ""}, {"--use-flash-attn", Kind::kRead, true, ""},
    {"--num-layers", Kind::kRead, false, ""}, {"--hidden-size", Kind::kRead, false, ""},
    {"--num-attention-heads", Kind::kRead, false, ""}, {"--num-query-groups", Kind::kRead, false, ""},
    {"--group-query-attention", Kind::kRead, true, ""}, {"--kv-channels", Kind::kRead, false, ""},
    {"--ffn-hidden-size", Kind::kRead, false, ""}, {"--seq-length", Kind::kRead, false, ""},
    {"--max-position-embeddings", Kind::kRead, false, ""}, {"--normalization", Kind::kRead, false, ""},
    {"--position-embedding-type", Kind::kRead, false, ""}, {"--rotary-base", Kind::kRead, false, ""},
    {"--rotary-percent", Kind::kRead, false, ""}, {"--swiglu", Kind::kRead, true, ""},
    {"--untie-embeddings-and-output-weights", Kind::kRead, true, ""}, {"--disable-bias-linear", Kind::kRead, true, ""},
    {"--add-qkv-bias", Kind::kRead, true, ""}, {"--make-vocab-size-divisible-by", Kind::kRead, false, ""},
    {"--num-experts", Kind::kRead, false, ""}, {"--moe-router-topk", Kind::kRead, false, ""},
    {"--moe-ffn-hidden-size", Kind::kRead, false, ""}, {"--moe-shared-expert-intermediate-size", Kind::kRead, false, ""},
    {"--moe-token-dispatcher-type", Kind::kRead, false, ""}, {"--moe-expert-capacity-factor", Kind::kRead, false, ""},
    {"--moe-grouped-gemm", Kind::kRead, true, ""}, {"--cp-comm-type", Kind::kRead, false, ""},
    {"--sequence-parallel", Kind::kRead, true, ""}, {"--use-distributed-optimizer", Kind::kRead, true, ""},
    {"--use-torch-fsdp2", Kind::kRead, true, ""}, {"--bf16", Kind::kRead, true, ""}, {"--fp16", Kind::kRead, true, ""},
    {"--overlap-grad-reduce", Kind::kRead, true, ""}, {"--tp-comm-overlap", Kind::kRead, true, ""},
    {"--fp8-param-gather", Kind::kRead, true, ""}, {"--overlap-moe-expert-parallel-comm", Kind::kRead, true, ""},
    {"--grad-reduce-in-bf16", Kind::kRead, true, ""}, {"--no-masked-softmax-fusion", Kind::kRead, true, ""},
    {"--no-bias-gelu-fusion", Kind::kRead, true, ""}, {"--use-transformer-engine-op-fuser", Kind::kRead, true, ""},
    {"--cpu-offloading-num-layers", Kind::kRead, false, ""}, {"--cpu-offloading", Kind::kRead, true, ""},
    {"--cuda-graph-impl", Kind::kRead, false, ""}, {"--cuda-graph-modules", Kind::kRead, false, ""},
    {"--cuda-graph-scope", Kind::kRead, false, ""}, {"--enable-cuda-graph", Kind::kRead, true, ""},
    {"--external-cuda-graph", Kind::kRead, true, ""},
    {"--account-for-embedding-in-pipeline-split", Kind::kRead, true, ""},
    // Multi-head latent attention and the dense first layers: checked against --model's mla and
    // moe.dense_layers (interop/megatron_args.cpp).
    {"--multi-latent-attention", Kind::kRead, true, ""}, {"--q-lora-rank", Kind::kRead, false, ""},
    {"--kv-lora-rank", Kind::kRead, false, ""}, {"--qk-head-dim", Kind::kRead, false, ""},
    {"--qk-pos-emb-head-dim", Kind::kRead, false, ""}, {"--v-head-dim", Kind::kRead, false, ""},
    {"--moe-layer-freq", Kind::kRead, false, ""}, {"--mtp-num-layers", Kind::kRead, false, ""},
    {"--pipeline-model-parallel-layout", Kind::kRead, false, ""},
    {"--account-for-loss-in-pipeline-split", Kind::kRead, true, ""}};

// Known, not modeled: each may change the iteration's time or memory.
const Entry kNotModeled[] = {
    {"--overlap-param-gather", Kind::kNotModeled, true, "the ZeRO-1 parameter all-gather overlapped with the forward"},
    {"--manual-gc", Kind::kNotModeled, true, "Python garbage collection at fixed steps"},
    {"--manual-gc-interval", Kind::kNotModeled, false, "Python garbage collection at fixed steps"},
    {"--no-gradient-accumulation-fusion", Kind::kNotModeled, true, "weight-gradient GEMMs without fused accumulation"},
    {"--no-bias-swiglu-fusion", Kind::kNotModeled, true, "an unfused bias and SwiGLU"},
    {"--no-bias-dropout-fusion", Kind::kNotModeled, true, "an unfused bias, dropout and residual"},
    {"--no-rope-fusion", Kind::kNotModeled, true, "an unfused RoPE"},
    {"--cross-entropy-loss-fusion", Kind::kNotModeled, true, "Megatron-Core's fused cross entropy"},
    {"--cross-entropy-fusion-impl", Kind::kNotModeled, false, "Megatron-Core's fused cross entropy"},
    {"--attention-softmax-in-fp32", Kind::kNotModeled, true, "the softmax of unfused attention in fp32"},
    {"--use-precision-aware-optimizer", Kind::kNotModeled, true, "optimizer states in lower precision"},
    {"--moe-permute-fusion", Kind::kNotModeled, true, "fused token permutation"},
    {"--moe-router-load-balancing-type", Kind::kNotModeled, false, "how evenly tokens reach the experts"},
    {"--moe-router-dtype", Kind::kNotModeled, false, "the router's precision"},
    {"--fp8-recipe", Kind::kRead, false, ""},
    {"--empty-unused-memory-level", Kind::kNotModeled, false, "torch.cuda.empty_cache calls each iteration"},
    {"--deepspeed", Kind::kNotModeled, true, "Megatron-DeepSpeed's engine: give its config with --from deepspeed"},
    {"--deepspeed_config", Kind::kNotModeled, false, "Megatron-DeepSpeed's engine: give its config with --from deepspeed"},
    {"--deepspeed-activation-checkpointing", Kind::kNotModeled, true, "DeepSpeed's checkpointing of the layers --checkpoint-activations names"},
    {"--zero-stage", Kind::kNotModeled, false, "Megatron-DeepSpeed's ZeRO stage: give its config with --from deepspeed"}};

// Optimizer offload to the host: refused until modeled (the prediction would be a GPU-only job's).
const Entry kRefused[] = {
    {"--optimizer-cpu-offload", Kind::kRefused, true,
     "moves the optimizer states and their step to the host; trainsim does not model optimizer offload yet"}};

// Known, no effect on an iteration's speed or memory: optimizer values, the learning-rate schedule,
// data, tokenizer, checkpoints, logging, numerics.
const char* const kNoEffectValues[] = {
    "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters", "--lr-decay-samples", "--lr-warmup-iters",
    "--lr-warmup-fraction", "--lr-warmup-samples", "--lr-warmup-init", "--train-iters", "--train-samples",
    "--weight-decay", "--clip-grad", "--adam-beta1", "--adam-beta2", "--adam-eps", "--init-method-std", "--seed",
    "--save", "--load", "--save-interval", "--eval-interval", "--eval-iters", "--log-interval", "--data-path",
    "--train-data-path", "--valid-data-path", "--test-data-path", "--data-cache-path", "--split", "--tokenizer-type",
    "--tokenizer-model", "--vocab-file", "--merge-file", "--vocab-size", "--tensorboard-dir", "--wandb-project",
    "--wandb-exp-name", "--wandb-save-dir", "--exit-interval", "--exit-duration-in-mins", "--attention-dropout",
    "--hidden-dropout", "--norm-epsilon", "--num-workers", "--distributed-backend", "--distributed-timeout-minutes",
    "--ckpt-format", "--timing-log-level", "--tensorboard-log-interval", "--moe-aux-loss-coeff", "--moe-z-loss-coeff",
    "--rope-scaling-factor", "--tp-comm-overlap-cfg"};
const char* const kNoEffectSwitches[] = {
    "--use-mcore-models", "--log-throughput", "--no-load-optim", "--no-load-rng", "--no-save-optim", "--no-save-rng",
    "--async-save", "--use-checkpoint-args", "--use-dist-ckpt", "--finetune", "--mock-data", "--log-timers-to-tensorboard",
    "--log-validation-ppl-to-tensorboard", "--log-num-zeros-in-grad", "--log-params-norm", "--use-rope-scaling",
    "--apply-query-key-layer-scaling", "--no-check-for-nan-in-loss-and-grad"};

// torchrun's and srun's own flags: the world size, and rendezvous details.
const char* const kLauncherValues[] = {
    "--nnodes", "--nproc-per-node", "--nproc_per_node", "--node-rank", "--node_rank", "--master-addr", "--master_addr",
    "--master-port", "--master_port", "--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint",
    "--rdzv-id", "--rdzv_id", "--nodes", "--ntasks-per-node", "--gpus-per-node"};

const std::map<std::string, MegatronFlagInfo>& table() {
  static const std::map<std::string, MegatronFlagInfo> all = [] {
    std::map<std::string, MegatronFlagInfo> t;
    for (const Entry& e : kRead) t[e.name] = {e.kind, e.is_switch, e.why};
    for (const Entry& e : kNotModeled) t[e.name] = {e.kind, e.is_switch, e.why};
    for (const Entry& e : kRefused) t[e.name] = {e.kind, e.is_switch, e.why};
    for (const char* name : kNoEffectValues) t[name] = {Kind::kNoEffect, false, ""};
    for (const char* name : kNoEffectSwitches) t[name] = {Kind::kNoEffect, true, ""};
    for (const char* name : kLauncherValues) t[name] = {Kind::kLauncher, false, ""};
    t["--standalone"] = {Kind::kLauncher, true, ""};
    return t;
  }();
  return all;
}

}  // namespace

const MegatronFlagInfo* megatron_flag(const std::string& name) {
  const auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

const std::set<std::string>& megatron_switches() {
  static const std::set<std::string> switches = [] {
    std::set<std::string> s;
    for (const auto& [name, info] : table()) {
      if (info.is_switch) s.insert(name);
    }
    return s;
  }();
  return switches;
}

const std::vector<std::string>& megatron_flag_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& entry : table()) n.push_back(entry.first);
    return n;
  }();
  return names;
}

}  // namespace trainsim
