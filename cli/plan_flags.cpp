// PlanOptions' flags: each plan size and choice with its Megatron-LM spelling, its help and its
// check (add_to), and what the given ones set in a plan (apply_flags). Their resolution into a
// plan (framework defaults, the GPU count, the global batch) is cli/shared_options.cpp's.
#include "cli/shared_options.hpp"

#include <CLI/CLI.hpp>

#include "cli/option_checks.hpp"
#include "common/errors.hpp"
#include "common/limits.hpp"
#include "common/nearest_name.hpp"
#include "plan/framework_preset.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

namespace {
struct SizeFlag {
  const char* name;  // flag without "--", also the key in PlanOptions::sizes
  const char* aliases;  // further names, comma-separated ("" for none)
  const char* help;
  int64_t max;       // the largest value accepted (common/limits.hpp)
  const char* unit;  // what it counts, for the range message
};
// Each flag also answers to its long name and to Megatron-LM's spelling (megatron/training/arguments.py),
// so a Megatron command line's options can be pasted.
const SizeFlag kSizeFlags[] = {
    {"dp", "--data-parallel", "data-parallel size (default: gpus / (tp*pp*cp), or 1)", limits::kMaxGpus, "ranks"},
    {"tp", "--tensor-parallel,--tensor-model-parallel-size", "tensor-parallel size", limits::kMaxGpus, "ranks"},
    {"pp", "--pipeline-parallel,--pipeline-model-parallel-size", "pipeline-parallel size", limits::kMaxGpus, "stages"},
    {"vpp", "--virtual-pipeline-parallel,--num-virtual-stages-per-pipeline-rank",
     "virtual pipeline stages per rank (interleaved schedule; zb-v: 2)", limits::kMaxLayers, "model chunks"},
    {"cp", "--context-parallel,--context-parallel-size", "context-parallel size (ring attention)", limits::kMaxGpus, "ranks"},
    {"ep", "--expert-parallel,--expert-model-parallel-size",
     "expert-parallel size (MoE models: experts / ep per rank, all-to-all token dispatch)", limits::kMaxGpus, "ranks"},
    {"expert-tp", "--expert-tensor-parallel-size",
     "expert tensor-parallel size (Megatron's --expert-tensor-parallel-size; default 1 with --ep > 1, else tp)", limits::kMaxGpus, "ranks"},
    {"first-stage-layers", "--decoder-first-pipeline-num-layers",
     "transformer layers on the first pipeline stage (Megatron-Core's uneven split)", limits::kMaxLayers, "layers"},
    {"dp-shard", "", "ZeRO shard group size (HSDP: shard over this many dp x cp ranks, replicate across)", limits::kMaxGpus, "ranks"},
    {"last-stage-layers", "--decoder-last-pipeline-num-layers", "transformer layers on the last pipeline stage", limits::kMaxLayers, "layers"},
    {"micro-batch", "--micro-batch-size", "sequences per micro-batch", limits::kMaxBatch, "sequences"},
    {"global-batch", "--global-batch-size",
     "sequences per iteration (default: dp x micro-batch; model and predict: x pp, the fewest micro-batches that fill the pipeline)",
     limits::kMaxBatch, "sequences"},
};

// The plan's named choices: flag, field, help, accepted values.
struct ChoiceFlag {
  const char* name;
  std::string PlanOptions::*field;
  const char* help;
  std::vector<std::string> values;
};
const std::vector<ChoiceFlag>& choice_flags() {
  static const std::vector<ChoiceFlag> flags = {
      {"recompute", &PlanOptions::recompute,
       "activation recomputation (selective: Megatron's attention core; selective_op: torchtitan's per-op checkpointing)",
       {"none", "selective", "full", "selective_op"}},
      {"recompute-method", &PlanOptions::recompute_method,
       "with --recompute full, which layers (Megatron's --recompute-method): uniform (every layer, in groups of N; default) "
       "or block (the first N of each model chunk) or every (every N-th layer: torchtitan's selective_ac_option N)",
       {"uniform", "block", "every"}},
      {"moe-dispatcher", &PlanOptions::moe_dispatcher,
       "MoE token dispatcher (Megatron's --moe-token-dispatcher-type): alltoall (default), allgather (Megatron-Core's default) or flex (DeepEP / HybridEP: a token sent once per node)",
       {"alltoall", "allgather", "flex"}},
      {"schedule", &PlanOptions::schedule,
       "pipeline schedule (zb-1p / zb-2p: Zero Bubble, the backward split into input and weight gradients; zb-v: "
       "Zero Bubble's V, two chunks per rank)",
       {"gpipe", "1f1b", "interleaved", "zb-1p", "zb-2p", "zb-v"}},
      {"precision", &PlanOptions::precision, "training precision (default bf16): mxfp8 and nvfp4 are Transformer Engine's block-scaled recipes on Blackwell", {"bf16", "fp16", "fp32", "fp8", "mxfp8", "nvfp4"}},
      {"fp8-recipe", &PlanOptions::fp8_recipe,
       "with --precision fp8: delayed (Transformer Engine's delayed scaling, default), tensorwise (Transformer Engine's "
       "per-tensor current scaling: Megatron's --fp8-recipe tensorwise, Megatron-Bridge's fp8_cs), blockwise (Transformer "
       "Engine's 1 x 128 / 128 x 128 block scaling: Megatron's --fp8-recipe blockwise, DeepSeek-V3's scheme) or rowwise "
       "(torchao's dynamic row-wise scaling, torchtitan's float8 rowwise)",
       {"delayed", "tensorwise", "blockwise", "rowwise"}},
      {"attention", &PlanOptions::attention, "attention kernel (default flash)", {"flash", "unfused"}},
      {"cross-entropy", &PlanOptions::cross_entropy,
       "loss kernel: fused (Megatron's vocab-parallel, default), pytorch (torch cross_entropy on fp32 logits) or "
       "compiled (the same under torch.compile: torchtitan since 2025-04 with compile on)",
       {"fused", "pytorch", "compiled"}},
      {"cp-comm", &PlanOptions::cp_comm,
       "how CP ranks share K and V: p2p (a ring overlapped with attention, default), all_gather (Llama 3's) or a2a "
       "(Ulysses' head split)",
       {"p2p", "all_gather", "a2a"}},
      {"zero3-collectives", &PlanOptions::zero3_collectives,
       "with --zero 3: per_layer (FSDP units: one all-gather and one reduce-scatter per layer, default) or deepspeed "
       "(DeepSpeed stage 3: an all-gather per prefetch bucket of modules, forward and backward; gradients in 5e8-element buckets)",
       {"per_layer", "deepspeed"}},
      {"zero-engine", &PlanOptions::zero_engine,
       "with --zero 1-3: whose ZeRO holds the gradients: megatron (Megatron-Core / PyTorch FSDP, default) or deepspeed "
       "(DeepSpeed's contiguous gradient buckets, 5e8 16-bit elements each: one, two with overlap_comm below stage 3)",
       {"megatron", "deepspeed"}},
      {"norm", &PlanOptions::norm,
       "RMSNorm kernel: fused (default; Megatron/TE, torch.compile) or eager (PyTorch's composite, an uncompiled torchtitan)",
       {"fused", "eager"}},
  };
  return flags;
}

}  // namespace

void PlanOptions::add_to(CLI::App& app) {
  command_name = app.get_name();
  options["plan"] = app.add_option("--plan", plan_path, "plan JSON (flags given here override its keys)");
  options["gpus"] = app.add_option("--gpus", gpus, "number of GPUs (sets dp when --dp is left out)")
                        ->transform(whole_number(1, limits::kMaxGpus, "GPUs"));
  for (const auto& flag : kSizeFlags) {
    sizes[flag.name] = 1;
    const std::string names = std::string("--") + flag.name + (*flag.aliases != '\0' ? std::string(",") + flag.aliases : "");
    options[flag.name] = app.add_option(names, sizes[flag.name], flag.help)
                             ->transform(whole_number(1, flag.max, flag.unit));
  }
  sizes["zero"] = 0;
  options["zero"] = app.add_option("--zero", sizes["zero"], "ZeRO stage 0-3 (3 = FSDP)")->transform(whole_number(0, 3, "the ZeRO stage", "stage 3 shards parameters, gradients and optimizer states (FSDP); there is no higher stage"));
  for (const ChoiceFlag& flag : choice_flags()) {
    options[flag.name] = app.add_option(std::string("--") + flag.name, this->*flag.field, flag.help)->check(CLI::IsMember(flag.values));
  }
  options["recompute-num-layers"] = app.add_option("--recompute-num-layers", recompute_layers,
                                                   "N of --recompute-method: layers per group (uniform, default 1) or "
                                                   "recomputed per model chunk (block, 0 = none) or one in N (every)")
                                        ->transform(whole_number(0, limits::kMaxLayers, "layers"));
  options["recompute-modules"] = app.add_option("--recompute-modules", recompute_modules,
                                                "with --recompute selective, what it re-runs (Megatron-Core's --recompute-modules, "
                                                "comma-separated; default core_attn): " + std::string(recompute_module_names()))
                                     ->check(comma_list_check(parse_recompute_module, "a recompute module", recompute_module_names()));
  options["pipeline-layout"] = app.add_option("--pipeline-layout", pipeline_layout,
                                              "transformer layers of each virtual pipeline stage in model order, comma-separated "
                                              "(pp x vpp counts: Megatron-Core's --pipeline-model-parallel-layout, its t's per stage)")
                                   ->check([](const std::string& text) -> std::string {
                                     try {
                                       parse_pipeline_layout(text);
                                     } catch (const InputError& e) {
                                       return e.what();
                                     }
                                     return "";
                                   });
  options["sequence-parallel"] = app.add_flag("--sequence-parallel", sequence_parallel, "Megatron sequence parallelism");
  options["global-batch-tokens"] = app.add_option("--global-batch-tokens", global_batch_tokens,
                                                  "tokens per iteration instead of --global-batch (4M = 4 x 2^20, 512K = 512 x 2^10; "
                                                  "a whole number of sequences)")
                                       ->transform(token_count());
  options["framework"] = app.add_option("--framework", framework,
                                        "defaults of this framework for what the plan leaves out (ZeRO stage, SP with TP, "
                                        "micro-batch): " + join_names(framework_preset_names()))
                             ->check(CLI::IsMember(framework_preset_names()));
  options["no-dp-overlap"] = app.add_flag("--no-dp-overlap", no_dp_overlap,
                                          "reduce DP gradients after the whole backward instead of overlapping");
  options["no-tp-overlap"] = app.add_flag("--no-tp-overlap", no_tp_overlap,
                                          "run the backward TP collectives on the critical path (no GEMM overlap)");
  options["grad-reduce-in-bf16"] = app.add_flag("--grad-reduce-in-bf16", grad_reduce_in_bf16,
                                                "accumulate and reduce DP gradients in bf16 instead of fp32 (Megatron-LM "
                                                "--grad-reduce-in-bf16; Megatron-Bridge's performance recipes)");
  options["no-masked-softmax-fusion"] = app.add_flag("--no-masked-softmax-fusion", no_masked_softmax_fusion,
                                                     "unfused attention's softmax as PyTorch's masked_fill_ and softmax "
                                                     "(Megatron-LM's flag; GPT-NeoX's default)");
  options["no-bias-gelu-fusion"] = app.add_flag("--no-bias-gelu-fusion", no_bias_gelu_fusion,
                                                "a biased GELU FFN adds its bias in a kernel of its own (Megatron-LM's flag; "
                                                "GPT-NeoX's default)");
  options["te-op-fuser"] = app.add_flag("--te-op-fuser", te_op_fuser,
                                        "MoE: the experts' MLP through Transformer Engine's operation fuser (Megatron-Core "
                                        "--use-transformer-engine-op-fuser): a biased expert's bias inside the fused op, "
                                        "not a Python loop over the local experts");
  options["lora-rank"] = app.add_option("--lora-rank", lora_rank,
                                        "LoRA fine-tuning: adapters of this rank beside every layer's qkv, proj, fc1 and fc2 "
                                        "(Megatron-Bridge's peft lora); the base weights frozen (no weight gradients, optimizer "
                                        "states or gradient reduction for them)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  options["cpu-offload-layers"] = app.add_option("--cpu-offload-layers", cpu_offload_layers,
                                                 "CPU activation offloading (Megatron-Core --cpu-offloading-num-layers): this many "
                                                 "layers' saved activations go to the host after their forward and come back for "
                                                 "their backward, over the GPU's host link; needs pp 1 and no recompute")
                                      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  options["tp-comm-overlap"] = app.add_flag("--tp-comm-overlap", tp_comm_overlap,
                                            "overlap every TP collective with a GEMM, forward and backward (Megatron-Core "
                                            "--tp-comm-overlap, torchtitan async TP); needs --sequence-parallel");
  options["ep-comm-overlap"] = app.add_flag("--ep-comm-overlap", ep_comm_overlap,
                                            "MoE: hide each micro-batch's token all-to-alls under another's compute (Megatron-Core "
                                            "--overlap-moe-expert-parallel-comm); needs --ep > 1, and interleaving with --pp > 1");
  options["cuda-graphs"] = app.add_option("--cuda-graphs", cuda_graphs,
                                          "what CUDA graphs capture, so the host issues none of it (Megatron-Core's "
                                          "--cuda-graph-scope; comma-separated, none for no graphs): " + std::string(cuda_graph_names()))
                               ->check(cuda_graphs_check());
  options["moe-imbalance"] = app.add_option("--moe-imbalance", moe_imbalance,
                                           "MoE: token copies the busiest EP rank gets over the mean (default 1: balanced)")
                                ->check(real_number(1, 1000, "times the mean", false));
  options["moe-capacity-factor"] = app.add_option("--moe-capacity-factor", moe_capacity_factor,
                                                 "MoE: expert capacity over the mean; copies beyond it are dropped "
                                                 "(Megatron-Core --moe-expert-capacity-factor; default: dropless)")
                                      ->check(real_number(0, 1000, "times the mean; 0 = dropless", false));
}

void PlanOptions::apply_flags(ParallelPlan& p) const {
  auto take = [&](const char* flag, int64_t& field) {
    if (given(flag)) field = sizes.at(flag);
  };
  take("dp", p.dp);
  take("tp", p.tp);
  take("pp", p.pp);
  take("vpp", p.vpp);
  take("cp", p.cp);
  take("ep", p.ep);
  take("expert-tp", p.expert_tp);
  take("first-stage-layers", p.first_stage_layers);
  take("dp-shard", p.dp_shard);
  take("last-stage-layers", p.last_stage_layers);
  if (given("pipeline-layout")) p.pipeline_layout = parse_pipeline_layout(pipeline_layout);
  take("micro-batch", p.micro_batch);
  take("global-batch", p.global_batch);
  if (given("zero")) p.zero_stage = static_cast<int>(sizes.at("zero"));
  if (given("recompute")) p.recompute = parse_recompute(recompute);
  if (given("recompute-method")) p.recompute_method = parse_recompute_method(recompute_method);
  if (given("recompute-num-layers")) p.recompute_layers = recompute_layers;
  if (given("recompute-modules")) {
    p.recompute_modules = 0;
    for (RecomputeModules flag : comma_list(recompute_modules, parse_recompute_module)) p.recompute_modules |= flag;
  }
  if (given("sequence-parallel")) p.sequence_parallel = sequence_parallel;
  if (given("precision")) p.precision = parse_precision(precision);
  if (given("fp8-recipe")) {
    p.fp8_recipe = parse_fp8_recipe(fp8_recipe);
  }
  if (given("attention")) p.attention = parse_attention(attention);
  if (given("cross-entropy")) p.cross_entropy = parse_cross_entropy(cross_entropy);
  if (given("norm")) p.norm = norm == "eager" ? NormKernel::kEager : NormKernel::kFused;
  if (given("cp-comm")) p.cp_comm = parse_cp_comm(cp_comm);
  if (given("zero3-collectives")) {
    p.zero3_collectives = zero3_collectives == "deepspeed" ? Zero3Collectives::kDeepSpeed : Zero3Collectives::kPerLayer;
  }
  if (given("zero-engine")) p.zero_engine = zero_engine == "deepspeed" ? ZeroEngine::kDeepSpeed : ZeroEngine::kMegatron;
  if (given("no-dp-overlap")) p.dp_overlap = !no_dp_overlap;
  if (given("no-tp-overlap")) p.tp_overlap = !no_tp_overlap;
  if (given("grad-reduce-in-bf16")) p.grad_reduce_in_fp32 = !grad_reduce_in_bf16;
  if (given("no-masked-softmax-fusion")) p.softmax_fusion = !no_masked_softmax_fusion;
  if (given("no-bias-gelu-fusion")) p.bias_gelu_fusion = !no_bias_gelu_fusion;
  if (given("te-op-fuser")) p.te_op_fuser = te_op_fuser;
  if (given("lora-rank")) p.lora_rank = lora_rank;
  if (given("cpu-offload-layers")) p.cpu_offload_layers = cpu_offload_layers;
  if (given("tp-comm-overlap")) p.tp_comm_overlap = tp_comm_overlap;
  if (given("ep-comm-overlap")) p.ep_comm_overlap = ep_comm_overlap;
  if (given("cuda-graphs")) p.cuda_graphs = parse_cuda_graph_list(cuda_graphs);
  if (given("moe-imbalance")) p.moe_imbalance = moe_imbalance;
  if (given("moe-capacity-factor")) p.moe_capacity_factor = moe_capacity_factor;
  if (given("moe-dispatcher")) p.moe_dispatcher = parse_moe_dispatcher(moe_dispatcher);
  if (given("schedule")) {
    p.schedule = parse_schedule(schedule);
    if (p.schedule == Schedule::kZeroBubbleV && !given("vpp")) p.vpp = 2;  // ZB-V's two chunks per rank
  } else if (given("vpp") && p.vpp > 1) {
    p.schedule = Schedule::kInterleaved;  // --vpp N alone means interleaving; a file's schedule stays
  }
}

}  // namespace trainsim
