// Megatron-LM / Megatron-Core arguments -> a plan. The flags are Megatron-LM's
// (megatron/training/arguments.py); what a script leaves out takes Megatron's default (no ZeRO,
// fp32, no sequence parallelism, micro-batch 1, global batch = dp x micro-batch). Flags that set
// the model are checked against --model; the launcher's (torchrun, srun) give the world size.
// Every flag is sorted by what it means to the prediction (interop/megatron_flags.hpp): read, known
// but not modeled, known without effect on speed or memory, refused, or unknown ("did you mean").
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "common/errors.hpp"
#include "interop/launch_args.hpp"
#include "interop/megatron_args.hpp"
#include "interop/plan_import.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

namespace {

// Megatron-Core's --pipeline-model-parallel-layout ("Et*4|(t*4|)*14tmL": E the embedding, t a layer,
// m an MTP depth, L the loss, | between virtual stages, X*N and (...)*N repeat, commas and spaces
// cosmetic) flattened to one symbol per item; throws InputError naming what it cannot read.
std::string expand_layout(const std::string& text, size_t& i, bool nested, const std::string& file) {
  std::string out;
  const auto fail = [&](const std::string& why) {
    throw InputError(file + ": --pipeline-model-parallel-layout '" + text + "': " + why,
                     "Megatron-Core's syntax: E, t, m, L, | between stages, X*N and (...)*N, e.g. 'Et*4|(t*4|)*14tmL'");
  };
  while (i < text.size()) {
    const char c = text[i];
    std::string item;
    if (c == ')') {
      if (!nested) fail("a ')' without its '('");
      ++i;
      return out;
    }
    if (c == '(') {
      ++i;
      item = expand_layout(text, i, true, file);
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
      item = std::string(1, c);
      ++i;
    } else if (c == ',' || c == ' ' || c == '"' || c == '\'') {
      ++i;
      continue;
    } else {
      fail(std::string("'") + c + "' is not a layout symbol");
    }
    int64_t times = 1;
    if (i < text.size() && text[i] == '*') {
      size_t end = ++i;
      while (end < text.size() && end - i < 6 && text[end] >= '0' && text[end] <= '9') ++end;
      if (end == i) fail("'*' without a count");
      times = std::stoll(text.substr(i, end - i));
      i = end;
    }
    for (int64_t k = 0; k < times; ++k) out += item;
  }
  if (nested) fail("a '(' without its ')'");
  return out;
}

// The layout's transformer layers per virtual stage; its MTP depths must be the model's.
std::vector<int64_t> read_layout(const MegatronArgs& a, const ModelSpec& m) {
  const std::string text = a.text("--pipeline-model-parallel-layout", "");
  size_t i = 0;
  const std::string flat = expand_layout(text, i, false, a.file);
  std::vector<int64_t> layers(1, 0);
  int64_t mtp = 0;
  for (const char c : flat) {
    if (c == '|') layers.push_back(0);
    if (c == 't') ++layers.back();
    if (c == 'm') ++mtp;
  }
  if (mtp != m.mtp_layers) {
    throw InputError(a.file + ": --pipeline-model-parallel-layout places " + std::to_string(mtp) + " MTP depths; model \"" + m.name +
                         "\" has " + std::to_string(m.mtp_layers),
                     "give --mtp-layers " + std::to_string(mtp) + ", or a layout with the model's depths");
  }
  return layers;
}

// How the layers are placed: interleaving, explicit first/last-stage counts, and Megatron-Core's
// embedding/loss accounting (which trainsim applies by itself when layers + 2 divides pp x vpp).
void read_pipeline(const MegatronArgs& a, const ModelSpec& m, ParallelPlan& p) {
  const int64_t layers_per_chunk = a.number("--num-layers-per-virtual-pipeline-stage", 0);
  if (layers_per_chunk > 0) {
    if (m.layers % (p.pp * layers_per_chunk) != 0) {
      throw InputError(a.file + ": --num-layers-per-virtual-pipeline-stage: " + std::to_string(layers_per_chunk) +
                           " x pp (" + std::to_string(p.pp) + ") does not divide the layers (" + std::to_string(m.layers) +
                           ") of model \"" + m.name + "\"",
                       "check --model, or use --num-virtual-stages-per-pipeline-rank");
    }
    p.vpp = m.layers / (p.pp * layers_per_chunk);
  } else {
    p.vpp = a.number("--num-virtual-stages-per-pipeline-rank", 1);
  }
  if (a.has("--pipeline-model-parallel-layout")) {
    p.pipeline_layout = read_layout(a, m);
    if (p.vpp == 1 && static_cast<int64_t>(p.pipeline_layout.size()) > p.pp && p.pp > 0 &&
        static_cast<int64_t>(p.pipeline_layout.size()) % p.pp == 0) {
      p.vpp = static_cast<int64_t>(p.pipeline_layout.size()) / p.pp;  // Megatron-Core infers the chunks from the layout
    }
  }
  p.first_stage_layers = a.number("--decoder-first-pipeline-num-layers", 0);
  p.last_stage_layers = a.number("--decoder-last-pipeline-num-layers", 0);
  p.schedule = p.vpp > 1 ? Schedule::kInterleaved : Schedule::k1F1B;
  const bool embedding = a.has("--account-for-embedding-in-pipeline-split");
  const bool loss = a.has("--account-for-loss-in-pipeline-split");
  const int64_t stages = p.pp * p.vpp;
  if (embedding != loss) {
    throw InputError(a.file + ": " + (embedding ? "--account-for-embedding-in-pipeline-split" : "--account-for-loss-in-pipeline-split") +
                         " without the other: trainsim counts the embedding and the loss as a layer each, together",
                     "give both flags, or neither");
  }
  if (embedding && stages > 2 && (m.layers + 2) % stages != 0) {
    throw InputError(a.file + ": --account-for-embedding/loss-in-pipeline-split: layers + 2 (" + std::to_string(m.layers + 2) +
                         ") must be divisible by pp x vpp (" + std::to_string(stages) + ")",
                     "Megatron-Core refuses this split too; check --model");
  }
}

// Which layers full recomputation covers (megatron/core/recompute.py checkpointed_forward, per
// model chunk): --recompute-method uniform|block with --recompute-num-layers N. Megatron-Core
// requires both with full; a script without them is read as uniform 1, every layer alone.
void read_recompute_span(const MegatronArgs& a, ParallelPlan& p) {
  const std::string method = a.text("--recompute-method", "uniform");
  if (method != "uniform" && method != "block") {
    throw InputError(a.file + ": --recompute-method: \"" + method + "\" is not one of: uniform, block");
  }
  p.recompute_method = method == "block" ? RecomputeMethod::kBlock : RecomputeMethod::kUniform;
  p.recompute_layers = a.number("--recompute-num-layers", 1, p.recompute_method == RecomputeMethod::kBlock ? 0 : 1, limits::kMaxLayers);
}

// The recomputation: --recompute-granularity full|selective (with, for full, the layers it spans);
// --recompute-activations, which Megatron-LM turns into selective (arguments.py validate_args: it
// overrides --recompute-granularity); --checkpoint-activations, Megatron-DeepSpeed's (and
// Megatron-LM's before 2022) full recomputation of every --checkpoint-num-layers layers.
void read_recompute(const MegatronArgs& a, ImportedJob& job) {
  ParallelPlan& p = job.plan;
  const std::string granularity = a.text("--recompute-granularity", "none");
  if (granularity != "none" && granularity != "full" && granularity != "selective") {
    throw InputError(a.file + ": --recompute-granularity: \"" + granularity + "\" is not one of: full, selective");
  }
  p.recompute = granularity == "full" ? Recompute::kFull : granularity == "selective" ? Recompute::kSelective : Recompute::kNone;
  if (a.has("--recompute-activations")) {
    if (p.recompute == Recompute::kFull) {
      job.notes.push_back("--recompute-activations overrides --recompute-granularity full: Megatron-LM runs selective recomputation");
    }
    p.recompute = Recompute::kSelective;
  } else if (a.has("--checkpoint-activations") && p.recompute == Recompute::kNone) {
    p.recompute = Recompute::kFull;
    p.recompute_method = RecomputeMethod::kUniform;
    p.recompute_layers = a.number("--checkpoint-num-layers", 1, 1, limits::kMaxLayers);
    job.notes.push_back("--checkpoint-activations: full recomputation, every " + std::to_string(p.recompute_layers) +
                        " layer(s) checkpointed together (Megatron-DeepSpeed; today's Megatron-LM refuses the flag: "
                        "--recompute-granularity full --recompute-method uniform)");
  }
  if (p.recompute == Recompute::kFull && !a.has("--checkpoint-activations")) read_recompute_span(a, p);
  if (a.lists.count("--recompute-modules") > 0) {
    try {
      p.recompute_modules = parse_recompute_modules(a.lists.at("--recompute-modules"));
    } catch (const InputError& e) {
      throw InputError(a.file + ": --recompute-modules: " + e.problems().front(), e.hint());
    }
  }
}

// The attention kernel. --attention-backend (Megatron-Core's AttnBackend: flash, fused, unfused,
// local, auto) wins; auto lets Transformer Engine choose, which prefers cuDNN's fused attention on
// Hopper. Without it: flash-style with --use-flash-attn or Transformer Engine, else unfused.
void read_attention(const MegatronArgs& a, ImportedJob& job) {
  ParallelPlan& p = job.plan;
  const auto backend = a.values.find("--attention-backend");
  if (backend != a.values.end()) {
    const std::string& b = backend->second;
    if (b != "flash" && b != "fused" && b != "unfused" && b != "local" && b != "auto") {
      throw InputError(a.file + ": --attention-backend: \"" + b + "\" is not one of: flash, fused, unfused, local, auto",
                       "Megatron-Core's AttnBackend (megatron/core/transformer/enums.py)");
    }
    p.attention = b == "unfused" || b == "local" ? AttentionKernel::kUnfused : AttentionKernel::kFlash;
    if (b == "flash") {
      job.not_modeled.push_back("--attention-backend flash (FlashAttention-2 through Transformer Engine; priced as "
                                "Megatron's cuDNN fused attention, faster on Hopper)");
    }
    return;
  }
  const std::string impl = a.text("--transformer-impl", "");
  p.attention = a.has("--use-flash-attn") || impl == "transformer_engine" ? AttentionKernel::kFlash : AttentionKernel::kUnfused;
  if (p.attention == AttentionKernel::kUnfused) {
    job.notes.push_back("attention unfused (neither --attention-backend, --use-flash-attn nor --transformer-impl transformer_engine)");
  }
}

// Who issues the ops: Transformer Engine's modules unless --transformer-impl local (Megatron-LM's
// default is transformer_engine). CUDA graphs: --cuda-graph-impl none | local | transformer_engine
// | full_iteration with --cuda-graph-modules (or the older --cuda-graph-scope; "full" and an empty
// list: whole layers), and the older switches --enable-cuda-graph (local) and
// --external-cuda-graph (transformer_engine), megatron/training/arguments.py at d98e8a6.
void read_cuda_graphs(const MegatronArgs& a, ImportedJob& job) {
  ParallelPlan& p = job.plan;
  p.host_stack = a.text("--transformer-impl", "transformer_engine") == "local" ? HostStack::kPytorch : HostStack::kTransformerEngine;
  std::string impl = a.text("--cuda-graph-impl", "none");
  if (impl == "none" && a.has("--enable-cuda-graph")) impl = "local";
  if (impl == "none" && a.has("--external-cuda-graph")) impl = "transformer_engine";
  if (impl != "none" && impl != "local" && impl != "transformer_engine" && impl != "full_iteration") {
    throw InputError(a.file + ": --cuda-graph-impl: \"" + impl + "\" is not one of: none, local, transformer_engine, full_iteration",
                     "Megatron-LM's --cuda-graph-impl (megatron/training/arguments.py)");
  }
  if (impl == "none") return;
  std::vector<std::string> scopes;
  for (const char* flag : {"--cuda-graph-modules", "--cuda-graph-scope"}) {
    if (a.lists.count(flag) > 0) scopes = a.lists.at(flag);
  }
  CudaGraphs graphs = 0;
  for (const std::string& scope : scopes) {
    if (scope == "full_iteration") graphs |= kGraphFullIteration;
    else if (scope == "full") graphs |= kGraphLayer;
    else if (scope == "mamba" || scope == "full_iteration_inference") job.not_modeled.push_back("--cuda-graph-modules " + scope);
    else if (cuda_graph_flag(scope) != 0 && scope != "layer") graphs |= cuda_graph_flag(scope);
    else throw InputError(a.file + ": --cuda-graph-modules: \"" + scope + "\" is not one of: attn, mlp, moe, moe_router, moe_preprocess, mamba, full",
                          "Megatron-LM's --cuda-graph-modules (megatron/training/arguments.py)");
  }
  p.cuda_graphs = impl == "full_iteration" ? kGraphFullIteration : graphs == 0 ? kGraphLayer : graphs;
}

void read_training(const MegatronArgs& a, ImportedJob& job) {
  ParallelPlan& p = job.plan;
  p.sequence_parallel = a.has("--sequence-parallel");
  p.micro_batch = a.number("--micro-batch-size", 1);
  if (a.values.count("--global-batch-size") > 0) p.global_batch = a.number("--global-batch-size", 1);
  else job.defaulted.push_back("global_batch");
  read_recompute(a, job);
  p.zero_stage = a.has("--use-torch-fsdp2") ? 3 : a.has("--use-distributed-optimizer") ? 1 : 0;
  p.precision = a.has("--fp4-format") ? Precision::kNvfp4 : a.has("--fp8-format") ? Precision::kFp8
                : a.has("--bf16") ? Precision::kBf16 : a.has("--fp16") ? Precision::kFp16 : Precision::kFp32;
  read_attention(a, job);
  p.dp_overlap = a.has("--overlap-grad-reduce");
  p.tp_comm_overlap = a.has("--tp-comm-overlap");
  p.ep_comm_overlap = a.has("--overlap-moe-expert-parallel-comm");
  // Megatron-LM's --fp8-recipe: delayed (its default), tensorwise (per-tensor current scaling),
  // blockwise and mxfp8 (precision mxfp8); custom (a user's quantizer) reads as delayed.
  // --fp4-format runs --fp4-recipe nvfp4 (its default; custom is not priced).
  const std::string fp8_recipe = a.text("--fp8-recipe", "delayed");
  if (fp8_recipe == "mxfp8" && p.precision == Precision::kFp8) p.precision = Precision::kMxfp8;
  else if ((fp8_recipe == "tensorwise" || fp8_recipe == "blockwise") && p.precision == Precision::kFp8) p.fp8_recipe = parse_fp8_recipe(fp8_recipe);
  else if (fp8_recipe != "delayed" && fp8_recipe != "tensorwise" && fp8_recipe != "blockwise" && fp8_recipe != "mxfp8") {
    job.not_modeled.push_back("--fp8-recipe " + fp8_recipe + " (priced as delayed)");
  }
  if (p.precision == Precision::kNvfp4 && a.text("--fp4-recipe", "nvfp4") != "nvfp4") {
    job.not_modeled.push_back("--fp4-recipe " + a.text("--fp4-recipe", "nvfp4") + " (priced as nvfp4)");
  }
  p.fp8_params = a.has("--fp8-param-gather");
  p.grad_reduce_in_fp32 = !a.has("--grad-reduce-in-bf16");
  p.softmax_fusion = !a.has("--no-masked-softmax-fusion");
  p.bias_gelu_fusion = !a.has("--no-bias-gelu-fusion");
  p.te_op_fuser = a.has("--use-transformer-engine-op-fuser");
  p.cpu_offload_layers = a.number("--cpu-offloading-num-layers", 0, 0, int64_t{1} << 20);
  if (a.has("--fp4-param-gather")) job.not_modeled.push_back("--fp4-param-gather (NVFP4 primary weights: priced as 16-bit weights cast every iteration)");
  p.moe_capacity_factor = a.real("--moe-expert-capacity-factor", 0.0);
  read_cuda_graphs(a, job);
}

// torchrun --nnodes N --nproc-per-node M, or srun --nodes N --ntasks-per-node M: N x M; 0 if not said.
int64_t launcher_gpus(const MegatronArgs& a) {
  for (const auto& [nodes, per_node] : {std::pair<const char*, const char*>{"--nnodes", "--nproc-per-node"},
                                        {"--nnodes", "--nproc_per_node"}, {"--nodes", "--ntasks-per-node"}}) {
    if (a.values.count(per_node) > 0) {
      const int64_t node_count = a.number(nodes, 1), ranks_per_node = a.number(per_node, 1);
      // Checked before multiplying: the product of two int64 may overflow (found by fuzz/).
      constexpr int64_t kMaxRanks = int64_t{1} << 20;
      if (node_count > kMaxRanks / ranks_per_node) {
        throw InputError(a.file + ": " + nodes + " " + std::to_string(node_count) + " x " + per_node + " " +
                             std::to_string(ranks_per_node) + " must be <= " + std::to_string(kMaxRanks) + " ranks",
                         "give the nodes and processes per node the job launches");
      }
      return node_count * ranks_per_node;
    }
  }
  return 0;
}

// The parallel layout's kinds: CP's exchange, and the experts' TP, EP and dispatcher.
void read_parallel_kinds(const MegatronArgs& a, const ModelSpec& model, ImportedJob& job) {
  ParallelPlan& p = job.plan;
  p.ep = a.number("--expert-model-parallel-size", 1, 1, limits::kMaxGpus);
  if (a.values.count("--cp-comm-type") > 0) {
    const std::string type = a.values.at("--cp-comm-type");
    if (type == "p2p" || type == "all_gather" || type == "a2a") p.cp_comm = parse_cp_comm(type);
    else job.not_modeled.push_back("--cp-comm-type " + type + " (modeled as p2p)");
  }
  // Megatron's expert TP defaults to TP (megatron/training/arguments.py); only MoE models have it.
  // Kept unset (0) where it equals trainsim's default for the plan, so that plans read back as written.
  if (model.moe) {
    const int64_t etp = a.number("--expert-tensor-parallel-size", p.tp, 1, limits::kMaxGpus);
    p.expert_tp = etp == (p.ep > 1 ? 1 : p.tp) ? 0 : etp;
  }
  // The dispatcher: Megatron-Core's default is allgather (TransformerConfig.moe_token_dispatcher_type).
  const auto dispatcher = a.values.find("--moe-token-dispatcher-type");
  const std::string type = dispatcher == a.values.end() ? "allgather" : dispatcher->second;
  if (type == "alltoall" || type == "allgather" || type == "flex") {
    if (model.moe) p.moe_dispatcher = parse_moe_dispatcher(type);  // flex: DeepEP or HybridEP, priced alike
  } else {
    job.not_modeled.push_back("--moe-token-dispatcher-type " + type + " (modeled as alltoall)");
  }
}

}  // namespace

ImportedJob import_megatron(const std::string& text, const std::string& file, const ModelSpec& model, int64_t gpus) {
  ImportedJob job;
  job.defaulted.push_back("dp");
  const MegatronArgs a = collect_megatron_args(text, file, job);
  if (a.values.empty() && a.switches.empty()) {
    // Megatron's defaults (fp32, no parallelism) would stand in for a whole job nobody wrote.
    throw InputError(file + ": no Megatron-LM argument in the file (not one --flag)",
                     "give the launch script or argument list of the job (e.g. the line that runs pretrain_gpt.py)");
  }
  check_megatron_model(a, model, job);
  ParallelPlan& p = job.plan;
  p.tp = a.number("--tensor-model-parallel-size", 1, 1, limits::kMaxGpus);
  p.pp = a.number("--pipeline-model-parallel-size", 1, 1, limits::kMaxGpus);
  p.cp = a.number("--context-parallel-size", 1, 1, limits::kMaxGpus);
  read_parallel_kinds(a, model, job);
  read_pipeline(a, model, p);
  read_training(a, job);
  if (a.values.count("--seq-length") > 0) job.seq_len = a.number("--seq-length", 0);
  if (gpus <= 0) job.gpus = launcher_gpus(a);  // --gpus wins, and spares reading the launcher's counts
  const int64_t world = gpus > 0 ? gpus : job.gpus;
  if (world <= 0) {
    throw InputError(file + ": the GPU count is not in the file (no torchrun --nnodes/--nproc-per-node or srun --nodes/--ntasks-per-node)",
                     "give --gpus N");
  }
  // Products compared in double first: the sizes are not bounded yet (validate_plan does that)
  // and an int64 product of them may overflow (found by fuzz/).
  const bool fits = static_cast<double>(p.tp) * p.pp * p.cp <= static_cast<double>(world);
  const int64_t model_parallel = fits ? p.tp * p.pp * p.cp : 0;
  if (!fits || world % model_parallel != 0) {
    throw InputError(file + ": " + std::to_string(world) + " GPUs is not a multiple of tp x pp x cp (" +
                         (fits ? std::to_string(model_parallel) : std::to_string(p.tp) + " x " + std::to_string(p.pp) + " x " + std::to_string(p.cp)) + ")",
                     "check --gpus against the script's parallel sizes");
  }
  p.dp = world / model_parallel;
  if (std::find(job.defaulted.begin(), job.defaulted.end(), "global_batch") != job.defaulted.end()) {
    if (static_cast<double>(p.dp) * p.micro_batch > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) {
      throw InputError(file + ": --micro-batch-size " + std::to_string(p.micro_batch) + " x dp " + std::to_string(p.dp) +
                       " is beyond any global batch", "give the --micro-batch-size the job runs");
    }
    p.global_batch = p.dp * p.micro_batch;
  }
  return job;
}

ParallelPlan parse_megatron_args(const std::string& args, const ModelSpec& model, int64_t gpus) {
  return import_megatron(args, "Megatron-LM arguments", model, gpus).plan;
}

}  // namespace trainsim
