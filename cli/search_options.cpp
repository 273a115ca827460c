// Binding of `search`'s options, and what an imported job fills in.
#include "cli/search_options.hpp"

#include <CLI/CLI.hpp>

#include "cli/option_checks.hpp"
#include "common/limits.hpp"
#include "common/nearest_name.hpp"
#include "plan/framework_preset.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

namespace {

// The plan space's "also try" options: CP exchanges, MoE dispatchers, Zero Bubble schedules, the
// overlaps, recomputation.
void add_space_options(CLI::App& app, SearchCommandOptions& o) {
  o.options["cp-comm"] = app.add_option("--cp-comm", o.request.cp_comm,
                  "how CP ranks share K and V, or several to try each (comma-separated): p2p (ring; default), "
                  "all_gather (Llama 3's; the default for a model with sliding windows), a2a (Ulysses)")
                  ->check(comma_list_check(parse_cp_comm, "a CP exchange", "p2p, all_gather, a2a"));
  o.options["moe-dispatcher"] = app.add_option("--moe-dispatcher", o.request.moe_dispatcher,
                  "MoE token dispatcher, or several to try each (comma-separated): alltoall (default), allgather, "
                  "flex (DeepEP / HybridEP)")
                  ->check(comma_list_check(parse_moe_dispatcher, "a MoE dispatcher", "alltoall, allgather, flex"));
  o.options["zero-bubble"] = app.add_option("--zero-bubble", o.request.zero_bubble,
                  "also try every plan with a pipeline with these Zero Bubble schedules (comma-separated): zb-1p, "
                  "zb-2p, zb-v (two chunks per rank in a V; torchtitan's ZBVZeroBubble)")
                  ->check(comma_list_check(parse_zero_bubble_schedule, "a Zero Bubble schedule", "zb-1p, zb-2p, zb-v"));
  o.options["tp-comm-overlap"] = app.add_flag("--tp-comm-overlap", o.request.tp_comm_overlap,
                                              "also try every plan with SP with its TP communication overlapped with the GEMMs "
                                              "(Megatron-Core --tp-comm-overlap, torchtitan async TP; on by default with "
                                              "--framework nemo or megatron-bridge)");
  o.options["ep-comm-overlap"] = app.add_flag("--ep-comm-overlap", o.request.ep_comm_overlap,
                                              "also try every MoE plan with expert parallelism with its token all-to-alls hidden "
                                              "under another micro-batch's compute (Megatron-Core --overlap-moe-expert-parallel-comm)");
  o.options["cuda-graphs"] = app.add_option("--cuda-graphs", o.request.cuda_graphs,
                  "what CUDA graphs capture on every candidate, so the host issues none of it (Megatron-Core's "
                  "--cuda-graph-modules; comma-separated, none for no graphs): " + std::string(cuda_graph_names()))
                  ->check(cuda_graphs_check());
  o.options["te-op-fuser"] = app.add_flag("--te-op-fuser", o.request.te_op_fuser,
                                          "MoE: every candidate's experts through Transformer Engine's operation fuser (Megatron-Core "
                                          "--use-transformer-engine-op-fuser): a biased expert's bias inside the fused op");
  o.options["lora-rank"] = app.add_option("--lora-rank", o.request.lora_rank,
                                          "LoRA fine-tuning on every candidate: adapters of this rank beside each layer's qkv, proj, "
                                          "fc1 and fc2, the base weights frozen (ZeRO-3 candidates are left out)")
                              ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  o.options["recompute-method"] = app.add_option("--recompute-method", o.request.recompute_method,
                  "also try full recomputation of these layers (Megatron's --recompute-method): block (the first N "
                  "of each model chunk), uniform (groups of N) or every (every N-th layer)")->check(CLI::IsMember({"uniform", "block", "every"}));
  o.options["recompute-num-layers"] = app.add_option("--recompute-num-layers", o.request.recompute_layers,
                  "N of --recompute-method (default 1)")->transform(whole_number(0, limits::kMaxLayers, "layers"));
  o.options["recompute-modules"] = app.add_option("--recompute-modules", o.request.recompute_modules,
                  "also try selective recomputation of these modules (Megatron-Core's --recompute-modules, comma-separated): " +
                  std::string(recompute_module_names()))
                  ->check(comma_list_check(parse_recompute_module, "a recompute module", recompute_module_names()));
}

}  // namespace

bool SearchCommandOptions::given(const std::string& name) const { return options.at(name)->count() > 0; }

SearchRequest SearchCommandOptions::parsed() const {
  SearchRequest r = request;
  r.cp_comm_given = given("cp-comm");
  r.recompute_modules_given = given("recompute-modules");
  r.zero_bubble_given = given("zero-bubble");
  return r;
}

void SearchCommandOptions::add_to(CLI::App& app) {
  model.add_to(app);
  hardware.add_to(app);
  format.add_to(app);
  from.add_to(app);
  options["gpus"] = app.add_option("--gpus", request.gpus, "number of GPUs")->transform(whole_number(1, limits::kMaxGpus, "GPUs"));
  options["max-gpus"] = app.add_option("--max-gpus", request.max_gpus, "also every power-of-two GPU count up to this")
                             ->transform(whole_number(1, limits::kMaxGpus, "GPUs"));
  options["global-batch"] = app.add_option("--global-batch", request.global_batch, "sequences per iteration (required unless --from gives it)")
                                  ->transform(whole_number(1, limits::kMaxBatch, "sequences"));
  options["global-batch-tokens"] = app.add_option("--global-batch-tokens", global_batch_tokens,
                                                  "tokens per iteration instead of --global-batch (4M = 4 x 2^20; a whole number of sequences)")
                                       ->transform(token_count())
                                       ->excludes(options["global-batch"]);
  app.add_option("--objective", request.objective, "rank by time or cost, or by either over goodput (effective-time, effective-cost)")
      ->check(CLI::IsMember({"time", "cost", "effective-time", "effective-cost"}));
  goodput.add_to(app, false);
  app.add_option("--top", top, "plans to show (default 10)")->transform(whole_number(1, 1000000, "plans"));
  app.add_option("--max-micro-batch", request.max_micro_batch, "largest micro-batch tried (default 16)")
      ->transform(whole_number(1, limits::kMaxBatch, "sequences"));
  app.add_option("--simulate-best", request.simulate_best,
                 "at most this many screened plans re-simulated on the event engine, best screened first (default 200); "
                 "simulation stops once no plan left can enter the --top shown")
      ->transform(whole_number(1, 10000000, "plans"));
  app.add_flag("--simulate-all", request.simulate_all,
               "simulate all --simulate-best plans, without stopping once the screen's margin rules the rest out");
  options["precision"] = app.add_option("--precision", request.precision,
                  "training precision, or several to search each (comma-separated, e.g. bf16,fp8,mxfp8,nvfp4; a GPU without one is skipped for it)")
                  ->check(comma_list_check(parse_precision, "a precision", "bf16, fp16, fp32, fp8, mxfp8, nvfp4"));
  options["attention"] = app.add_option("--attention", request.attention, "attention kernel")->check(CLI::IsMember({"flash", "unfused"}));
  options["framework"] = app.add_option("--framework", request.framework,
                  "price attention with this framework's kernel on Hopper (PyTorch SDPA: FlashAttention-2; "
                  "Megatron-Core/TE: cuDNN), and search its selective recomputation and loss (torchtitan: per-op "
                  "checkpointing, PyTorch cross-entropy): " + join_names(framework_preset_names()))
      ->check(CLI::IsMember(framework_preset_names()));
  options["compiled"] = app.add_flag("--compiled", request.compiled, "with --framework torchtitan: the run uses torch.compile (fused RMSNorm; the loss compiled too)");
  add_space_options(app, *this);
  app.add_flag("--tp-across-nodes", request.tp_across_nodes, "also try tensor parallelism wider than a node");
  app.add_flag("--uneven-pipeline,!--no-uneven-pipeline", request.uneven_pipeline,
               "also try pipelines that split the layers only with the embedding and loss counted as layers (Llama 3.1 405B at pp 8 or 16; "
               "Megatron-Core's --account-for-embedding/loss-in-pipeline-split; the default: --no-uneven-pipeline leaves them out)");
  app.add_option("--train-tokens", request.train_tokens, "tokens to train: report days and $ for the whole run")
      ->check(real_number(0, 1e18, "tokens"));
  app.add_option("--deadline-days", request.deadline_days, "drop plans that take longer (needs --train-tokens)")
      ->check(real_number(0, 1e5, "days"));
  app.add_option("--budget-usd", request.budget_usd, "drop plans that cost more (needs --train-tokens)")
      ->check(real_number(0, 1e15, "USD"));
  app.add_option("--threads", request.threads, "screening threads (default: all cores)")->transform(whole_number(1, 4096, "threads"));
  app.add_option("--export", export_to, "print the best plan as launch arguments")
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchrun", "torchtitan"}));
}

void SearchCommandOptions::take_from_import(const ImportedJob& job) {
  if (!given("gpus") && !given("max-gpus")) request.gpus = job.plan.gpus();
  if (!given("global-batch") && !given("global-batch-tokens")) request.global_batch = job.plan.global_batch;
  if (!given("precision")) request.precision = to_string(job.plan.precision);
  if (!given("cp-comm") && job.plan.cp > 1) request.cp_comm = to_string(job.plan.cp_comm);
  if (!given("moe-dispatcher") && !job.plan.experts_like_dense()) request.moe_dispatcher = to_string(job.plan.moe_dispatcher);
  if (!given("framework") && job.framework == "torchtitan") {
    request.framework = job.framework;
    if (!given("compiled")) request.compiled = job.plan.norm == NormKernel::kFused;
  }
}

}  // namespace trainsim
