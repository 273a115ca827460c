// Writing a torchtitan job TOML. Key names and semantics are torchtitan's JobConfig
// (torchtitan/config/job_config.py at 238fa99) and its Llama 3 parallelize / pipeline code:
// FSDP2 on data_parallel_shard_degree (ZeRO-3), DDP on data_parallel_replicate_degree only without
// other parallelism, SequenceParallel norms whenever tp > 1, local_batch_size per DP rank.
#include "interop/torchtitan_export.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "common/errors.hpp"
#include "model/model_catalog.hpp"
#include "plan/rank_memory.hpp"
#include "plan/recompute_span.hpp"

namespace trainsim {

std::vector<int64_t> torchtitan_stage_layers(int64_t layers, int64_t stages, int64_t first_less, int64_t last_less) {
  if (stages == 1) return {layers};
  const int64_t effective = layers + first_less + last_less;
  if (stages < 1 || first_less < 0 || last_less < 0 || stages > effective) return {};
  const int64_t share = effective / stages;
  if (share == 0 || first_less > share || last_less > share) return {};
  std::vector<int64_t> out(static_cast<size_t>(stages));
  int64_t left = layers;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t n = share + (s < effective % stages ? 1 : 0);
    if (s == 0) n -= first_less;
    if (s == stages - 1) n -= last_less;
    out[static_cast<size_t>(s)] = std::min(n, left);
    left -= out[static_cast<size_t>(s)];
  }
  return out;
}

std::string torchtitan_llama3_flavor(const ModelSpec& m) {
  // torchtitan/models/llama3/__init__.py: llama3_args "8B", "70B", "405B" (dim, n_layers, n_heads,
  // n_kv_heads, the FFN width from ffn_dim_multiplier and multiple_of), the Llama 3 tokenizer's vocabulary.
  for (const auto& [name, flavor] : {std::pair<const char*, const char*>{"llama3-8b", "8B"}, {"llama3-70b", "70B"},
                                     {"llama3-405b", "405B"}}) {
    const ModelSpec r = resolve_model(name);
    if (m.layers == r.layers && m.hidden == r.hidden && m.heads == r.heads && m.kv_heads == r.kv_heads &&
        m.ffn_hidden == r.ffn_hidden && m.ffn_kind == r.ffn_kind && m.vocab == r.vocab && !m.is_moe()) {
      return flavor;
    }
  }
  return "";
}

namespace {

std::string s(int64_t v) { return std::to_string(v); }

// Every setting of `p` torchtitan's Llama 3 trainer cannot run, each with what to use instead.
std::vector<std::string> refusals(const ParallelPlan& p) {
  std::vector<std::string> out;
  const std::string e = "export --to torchtitan: ";
  if (p.zero_stage == 1 || (p.zero_stage == 2 && p.pp == 1)) {
    out.push_back(e + "zero_stage " + s(p.zero_stage) + ": torchtitan has no ZeRO-1, and its ZeRO-2 (FSDP2 not resharded after forward) is "
                      "modeled with a pipeline only (FSDP2 is ZeRO-3, DDP is ZeRO-0); use zero_stage 3 or 0");
  }
  if (p.zero_stage == 0 && p.dp > 1 && p.tp * p.pp * p.cp > 1) {
    out.push_back(e + "zero_stage 0 with dp " + s(p.dp) + " and tp x pp x cp " + s(p.tp * p.pp * p.cp) +
                  ": torchtitan's DDP runs only alone (\"DDP has not supported > 1D parallelism\"); use zero_stage 3 (FSDP)");
  }
  if (p.zero_stage == 3 && p.dp_shard > 0 && p.dp_shard % p.cp != 0) {
    out.push_back(e + "dp_shard " + s(p.dp_shard) + " is not a multiple of cp " + s(p.cp) + ": torchtitan's FSDP mesh always spans the CP ranks");
  }
  if (p.zero_stage == 0 && p.cp > 1) {
    out.push_back(e + "zero_stage 0 with cp " + s(p.cp) + ": torchtitan shards the weights over the CP ranks with FSDP; use zero_stage 3");
  }
  if (p.recompute == Recompute::kSelective) {
    out.push_back(e + "recompute selective (Megatron's attention core): torchtitan has no such option; use recompute selective_op (its per-op checkpointing) or full");
  }
  if (is_partial_recompute(p) && p.recompute_method != RecomputeMethod::kEvery) {
    out.push_back(e + "recompute full with " + to_string(p.recompute_method) + " " + s(p.recompute_layers) +
                  ": torchtitan's full mode checkpoints every block alone (Megatron's uniform 1) and its layer-wise selective mode every N-th (every N); export it to megatron, or use uniform 1 or every N");
  }
  if (p.precision == Precision::kFp16) out.push_back(e + "precision fp16: torchtitan trains in bfloat16 or float32; use precision bf16");
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kBlockwise) {
    out.push_back(e + "fp8_recipe blockwise: trainsim prices Transformer Engine's block scaling (Megatron); torchtitan's float8 recipes are torchao's tensorwise and rowwise; export it to megatron, or use fp8_recipe rowwise");
  }
  if (p.precision == Precision::kMxfp8 || p.precision == Precision::kNvfp4) {
    out.push_back(e + "precision " + std::string(to_string(p.precision)) + ": trainsim prices Transformer Engine's recipe (Megatron); torchtitan's MX formats are torchao's, not modeled; export it to megatron, or use precision fp8");
  }
  if (p.ep > 1) out.push_back(e + "ep " + s(p.ep) + ": this target writes torchtitan's Llama 3 job (no experts); export an MoE plan to megatron");
  if (is_zero_bubble(p.schedule) && p.schedule != Schedule::kZeroBubbleV) {
    out.push_back(e + "schedule " + std::string(to_string(p.schedule)) + ": torchtitan's Zero Bubble schedules are the interleaved and V ones, not ZB-1p/2p; use zb-v, 1f1b or interleaved");
  }
  if (p.attention == AttentionKernel::kUnfused) out.push_back(e + "attention unfused: torchtitan runs PyTorch SDPA (fused); use attention flash");
  if (p.tp > 1 && !p.sequence_parallel) {
    out.push_back(e + "tp " + s(p.tp) + " without sequence parallelism: torchtitan's TP plan always shards the norms' activations; turn sequence_parallel on");
  }
  if (p.tp_comm_overlap && p.norm != NormKernel::kFused) {
    out.push_back(e + "tp_comm_overlap with norm eager: torchtitan's async TP runs only compiled (and a compiled run's norm is fused); use norm fused");
  }
  if (!p.dp_overlap) out.push_back(e + "dp_overlap off: torchtitan's FSDP2 and DDP always overlap the gradient reduction; turn dp_overlap on");
  return out;
}

struct PipelineKeys {
  int64_t first_less = 0, last_less = 0;
  int64_t layers_per_stage = 0;  // 0: not written (torchtitan's default stages per rank fit)
};

// The first/last-stage weights (and layers per stage, with interleaving) that make torchtitan
// place the layers where trainsim does; InputError if none does.
PipelineKeys pipeline_keys(const ModelSpec& m, const ParallelPlan& p) {
  const int64_t stages = p.pp * p.vpp;
  const std::vector<int64_t> want = virtual_stage_layers(m, p);
  std::optional<PipelineKeys> found;
  std::vector<std::pair<int64_t, int64_t>> tries = {{0, 0}, {1, 1}};
  for (int64_t a = 0; a <= m.layers / stages + 1; ++a) {
    for (int64_t b = 0; b <= m.layers / stages + 1; ++b) tries.emplace_back(a, b);
  }
  for (const auto& [first, last] : tries) {
    if (torchtitan_stage_layers(m.layers, stages, first, last) == want) {
      found = PipelineKeys{first, last, 0};
      break;
    }
  }
  if (!found) {
    throw InputError("export --to torchtitan: torchtitan cannot place the layers as this plan does (" +
                         describe_stage_layers(m, p) + " per stage; it takes layers off the first and last virtual stage only)",
                     "drop --first-stage-layers / --last-stage-layers, or choose a pp and vpp that split the layers evenly");
  }
  const int64_t weighted = m.layers + found->first_less + found->last_less;
  for (int64_t lps = 1; p.vpp > 1 && lps <= weighted && found->layers_per_stage == 0; ++lps) {
    if ((weighted + lps - 1) / lps == stages) found->layers_per_stage = lps;
  }
  if (p.vpp > 2 && found->layers_per_stage == 0) {
    throw InputError("export --to torchtitan: no pipeline_parallel_layers_per_stage gives pp x vpp = " + s(stages) +
                         " virtual stages for " + s(weighted) + " weighted layers",
                     "choose a vpp for which layers / (pp x vpp) is whole, or vpp 2 (torchtitan's default for interleaving)");
  }
  return *found;
}

const char* schedule_name(Schedule schedule) {
  switch (schedule) {
    case Schedule::kGpipe: return "GPipe";
    case Schedule::k1F1B: return "1F1B";
    case Schedule::kInterleaved: return "Interleaved1F1B";
    case Schedule::kZeroBubbleV: return "ZBVZeroBubble";
    case Schedule::kZeroBubble1p:
    case Schedule::kZeroBubble2p: break;  // refused above
  }
  return "1F1B";
}

void write_model_and_training(std::ostream& o, const ModelSpec& m, const ParallelPlan& p) {
  const std::string flavor = torchtitan_llama3_flavor(m);
  o << "[job]\ndescription = \"trainsim plan for " << m.name << ": dp " << p.dp << " x tp " << p.tp << " x pp " << p.pp
    << " x cp " << p.cp << " = " << p.gpus() << " GPUs\"\n\n[model]\nname = \"llama3\"\n";
  if (!flavor.empty()) o << "flavor = \"" << flavor << "\"\n";
  else o << "# flavor: must be set. \"" << m.name << "\" is not one of torchtitan's Llama 3 flavors (8B, 70B, 405B): register one with its architecture\n";
  if (p.precision == Precision::kFp8) o << "converters = [\"quantize.linear.float8\"]\n";
  // Without a pipeline the local batch runs at once; with one it is split into pipeline
  // micro-batches and runs in a single step (torchtitan accumulates by re-running the pipeline).
  const int64_t local = p.pp > 1 ? p.global_batch / p.dp : p.micro_batch;
  o << "\n[training]\nlocal_batch_size = " << local << "  # per data-parallel rank\n";
  if (p.global_batch != local * p.dp) {
    o << "global_batch_size = " << p.global_batch << "  # " << p.global_batch / (local * p.dp) << " gradient accumulation steps\n";
  }
  o << "seq_len = " << m.seq_len << "\nmixed_precision_param = \"" << (p.precision == Precision::kFp32 ? "float32" : "bfloat16") << "\"\n";
}

void write_parallelism(std::ostream& o, const ModelSpec& m, const ParallelPlan& p) {
  const bool fsdp = fsdp_layer_by_layer(p);  // ZeRO-3, or ZeRO-2 with a pipeline (FSDP2 not resharded after forward)
  // HSDP: torchtitan's shard degree leaves out the CP ranks it folds into the FSDP mesh.
  const int64_t replicate = fsdp ? p.shard_replicas() : p.dp, shard = fsdp ? p.shard_ranks() / p.cp : 1;
  o << "\n[parallelism]\ndata_parallel_replicate_degree = " << replicate << "\ndata_parallel_shard_degree = " << shard << "\n";
  if (fsdp && p.dp * p.cp > 1 && p.pp == 1) o << "fsdp_reshard_after_forward = \"always\"  # trainsim's ZeRO-3: gathered again for the backward\n";
  if (fsdp && p.dp * p.cp > 1 && p.pp > 1) o << "fsdp_reshard_after_forward = \"never\"  # trainsim's FSDP with a pipeline keeps the gathered weights\n";
  o << "tensor_parallel_degree = " << p.tp << "\nenable_async_tensor_parallel = " << (p.tp_comm_overlap ? "true" : "false") << "\n"
    << "pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) {
    const PipelineKeys k = pipeline_keys(m, p);
    o << "pipeline_parallel_schedule = \"" << schedule_name(p.schedule) << "\"\npipeline_parallel_microbatch_size = " << p.micro_batch
      << "\npipeline_parallel_first_stage_less_layers = " << k.first_less << "\npipeline_parallel_last_stage_less_layers = " << k.last_less
      << "\n";
    if (k.layers_per_stage > 0) o << "pipeline_parallel_layers_per_stage = " << k.layers_per_stage << "\n";
  }
  o << "context_parallel_degree = " << p.cp << "\n";
}

void write_checkpointing_and_kernels(std::ostream& o, const ParallelPlan& p) {
  o << "\n[activation_checkpoint]\n";
  if (p.recompute == Recompute::kSelectiveOp) o << "mode = \"selective\"\nselective_ac_option = \"op\"\n";
  else if (is_partial_recompute(p)) o << "mode = \"selective\"\nselective_ac_option = \"" << p.recompute_layers << "\"  # every N-th block checkpointed whole\n";
  else o << "mode = \"" << (p.recompute == Recompute::kFull ? "full" : "none") << "\"\n";
  // trainsim's fused RMSNorm is a compiled run's; the eager one an uncompiled torchtitan's.
  const bool model = p.norm == NormKernel::kFused, loss = p.cross_entropy == LossKernel::kCompiled;
  o << "\n[compile]\nenable = " << (model || loss ? "true" : "false") << "\ncomponents = [" << (model ? "\"model\"" : "")
    << (model && loss ? ", " : "") << (loss ? "\"loss\"" : "") << "]\n";
  if (p.precision == Precision::kFp8) {
    o << "\n[quantize.linear.float8]\nenable_fsdp_float8_all_gather = false  # fp8 all-gathers are not modeled by trainsim\n";
    if (p.fp8_recipe == Fp8Recipe::kRowwise) o << "recipe_name = \"rowwise\"\n";
  }
  if (p.cross_entropy == LossKernel::kFused) {
    o << "\n# torchtitan's loss is PyTorch's cross_entropy on fp32 logits; this plan was priced with a fused loss\n"
      << "# (predict --cross-entropy pytorch, or --framework torchtitan, prices torchtitan's)\n";
  }
}

}  // namespace

std::string export_torchtitan(const ModelSpec& m, const ParallelPlan& p, int64_t gpus_per_node) {
  const std::vector<std::string> problems = refusals(p);
  if (!problems.empty()) throw InputError(problems, "change the plan, or export it to megatron or deepspeed");
  const int64_t per_node = std::min(gpus_per_node, p.gpus());
  const int64_t nodes = (p.gpus() + per_node - 1) / per_node;
  std::ostringstream o;
  o << "# torchtitan job config (the TOML JobConfig torchtitan read before pytorch/torchtitan#2386), written by trainsim.\n"
    << "# Launch on " << p.gpus() << " GPUs: NGPU=" << per_node << " CONFIG_FILE=this.toml ./run_train.sh"
    << (nodes > 1 ? " on each of " + s(nodes) + " nodes (torchrun --nnodes " + s(nodes) + ")" : std::string()) << "\n"
    << "# Only what trainsim models is set; dataset, optimizer, steps and checkpoints keep torchtitan's defaults.\n\n";
  write_model_and_training(o, m, p);
  write_parallelism(o, m, p);
  write_checkpointing_and_kernels(o, p);
  return o.str();
}

}  // namespace trainsim
