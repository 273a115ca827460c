// `trainsim search --model M --gpu G[,G...] --gpus N|--max-gpus N --global-batch B
//  [--objective time|cost|effective-time|effective-cost] [--top K] [--train-tokens T --deadline-days D
//  --budget-usd B] [goodput options: cli/goodput_options.hpp]
//  [--export megatron|deepspeed|torchrun|torchtitan] [--from FORMAT FILE] [--format json]`: ranks every
//  valid plan; with --from, also simulates the imported plan to set it beside the best.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/goodput_options.hpp"
#include "cli/import_options.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "common/limits.hpp"
#include "common/nearest_name.hpp"
#include "interop/plan_export.hpp"
#include "plan/framework_preset.hpp"
#include "plan/plan_json.hpp"
#include "plan/recompute_span.hpp"
#include "reports/json_output.hpp"
#include "reports/prediction_report.hpp"
#include "reports/search_report.hpp"
#include "reports/text_table.hpp"
#include "sim/search.hpp"
#include "sim/simulator.hpp"

namespace trainsim {

namespace {

std::vector<int64_t> gpu_counts(int64_t gpus, int64_t max_gpus, int64_t per_node) {
  if (max_gpus <= 0) return {gpus};
  std::vector<int64_t> counts;  // powers of two up to --max-gpus (whole nodes above one node)
  for (int64_t n = 1; n <= max_gpus; n *= 2) {
    if (n >= per_node || per_node % n == 0) counts.push_back(n);
  }
  return counts;
}

void draw_progress(const std::string& label, double fraction) {
  const int width = 30;
  const int filled = static_cast<int>(fraction * width);
  std::fprintf(stderr, "\r%s [%s%s] %3d%%", label.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), ' ').c_str(), static_cast<int>(fraction * 100));
  std::fflush(stderr);
}

// --precision, --cp-comm, --moe-dispatcher: one value or several, comma-separated.
std::vector<Precision> precisions(const std::string& text) { return comma_list(text, parse_precision); }

struct Options {
  ModelOptions model;
  HardwareOptions hardware;
  FormatOption format;
  ImportOptions from;
  GoodputOptions goodput;
  int64_t gpus = 0, max_gpus = 0, global_batch = 0, top = 10, max_micro_batch = 16, simulate_best = 200;
  std::string objective = "time", precision = "bf16", attention = "flash", export_to, framework, recompute_method = "uniform";
  std::string cp_comm = "p2p", moe_dispatcher = "alltoall", recompute_modules, zero_bubble;
  int64_t recompute_layers = 1;
  bool compiled = false, tp_comm_overlap = false, ep_comm_overlap = false;
  double train_tokens = 0, deadline_days = 0, budget_usd = 0;
  int threads = 0;
  bool tp_across_nodes = false;
  std::map<std::string, CLI::Option*> options;
  bool given(const std::string& name) const { return options.at(name)->count() > 0; }
};

// A Zero Bubble schedule's name (the list of --zero-bubble).
Schedule parse_zero_bubble_schedule(const std::string& name) {
  const Schedule s = parse_schedule(name);
  if (!is_zero_bubble(s)) throw InputError("schedule \"" + name + "\" is not one of: zb-1p, zb-2p, zb-v");
  return s;
}

// The plan space's "also try" options: CP exchanges, MoE dispatchers, Zero Bubble schedules, the
// overlaps, recomputation.
void add_space_options(CLI::App* app, Options& o) {
  o.options["cp-comm"] = app->add_option("--cp-comm", o.cp_comm,
                  "how CP ranks share K and V, or several to try each (comma-separated): p2p (ring; default), "
                  "all_gather (Llama 3's; the default for a model with sliding windows), a2a (Ulysses)")
                  ->check(comma_list_check(parse_cp_comm, "a CP exchange", "p2p, all_gather, a2a"));
  o.options["moe-dispatcher"] = app->add_option("--moe-dispatcher", o.moe_dispatcher,
                  "MoE token dispatcher, or several to try each (comma-separated): alltoall (default), allgather, "
                  "flex (DeepEP / HybridEP)")
                  ->check(comma_list_check(parse_moe_dispatcher, "a MoE dispatcher", "alltoall, allgather, flex"));
  o.options["zero-bubble"] = app->add_option("--zero-bubble", o.zero_bubble,
                  "also try every plan with a pipeline with these Zero Bubble schedules (comma-separated): zb-1p, "
                  "zb-2p, zb-v (two chunks per rank in a V; torchtitan's ZBVZeroBubble)")
                  ->check(comma_list_check(parse_zero_bubble_schedule, "a Zero Bubble schedule", "zb-1p, zb-2p, zb-v"));
  o.options["tp-comm-overlap"] = app->add_flag("--tp-comm-overlap", o.tp_comm_overlap,
                                              "also try every plan with SP with its TP communication overlapped with the GEMMs "
                                              "(Megatron-Core --tp-comm-overlap, torchtitan async TP; on by default with "
                                              "--framework nemo or megatron-bridge)");
  o.options["ep-comm-overlap"] = app->add_flag("--ep-comm-overlap", o.ep_comm_overlap,
                                              "also try every MoE plan with expert parallelism with its token all-to-alls hidden "
                                              "under another micro-batch's compute (Megatron-Core --overlap-moe-expert-parallel-comm)");
  o.options["recompute-method"] = app->add_option("--recompute-method", o.recompute_method,
                  "also try full recomputation of these layers (Megatron's --recompute-method): block (the first N "
                  "of each model chunk), uniform (groups of N) or every (every N-th layer)")->check(CLI::IsMember({"uniform", "block", "every"}));
  o.options["recompute-num-layers"] = app->add_option("--recompute-num-layers", o.recompute_layers,
                  "N of --recompute-method (default 1)")->transform(whole_number(0, limits::kMaxLayers, "layers"));
  o.options["recompute-modules"] = app->add_option("--recompute-modules", o.recompute_modules,
                  "also try selective recomputation of these modules (Megatron-Core's --recompute-modules, comma-separated): " +
                  std::string(recompute_module_names()))
                  ->check(comma_list_check(parse_recompute_module, "a recompute module", recompute_module_names()));
}

void add_options(CLI::App* app, Options& o) {
  o.model.add_to(*app);
  o.hardware.add_to(*app);
  o.format.add_to(*app);
  o.from.add_to(*app);
  o.options["gpus"] = app->add_option("--gpus", o.gpus, "number of GPUs")->transform(whole_number(1, limits::kMaxGpus, "GPUs"));
  o.options["max-gpus"] = app->add_option("--max-gpus", o.max_gpus, "also every power-of-two GPU count up to this")
                             ->transform(whole_number(1, limits::kMaxGpus, "GPUs"));
  o.options["global-batch"] = app->add_option("--global-batch", o.global_batch, "sequences per iteration (required unless --from gives it)")
                                  ->transform(whole_number(1, limits::kMaxBatch, "sequences"));
  app->add_option("--objective", o.objective, "rank by time or cost, or by either over goodput (effective-time, effective-cost)")
      ->check(CLI::IsMember({"time", "cost", "effective-time", "effective-cost"}));
  o.goodput.add_to(*app, false);
  app->add_option("--top", o.top, "plans to show (default 10)")->transform(whole_number(1, 1000000, "plans"));
  app->add_option("--max-micro-batch", o.max_micro_batch, "largest micro-batch tried (default 16)")
      ->transform(whole_number(1, limits::kMaxBatch, "sequences"));
  app->add_option("--simulate-best", o.simulate_best, "screened plans re-simulated on the event engine (default 200)")
      ->transform(whole_number(1, 10000000, "plans"));
  o.options["precision"] = app->add_option("--precision", o.precision,
                  "training precision, or several to search each (comma-separated, e.g. bf16,fp8; a GPU without one is skipped for it)")
                  ->check(comma_list_check(parse_precision, "a precision", "bf16, fp16, fp32, fp8"));
  o.options["attention"] = app->add_option("--attention", o.attention, "attention kernel")->check(CLI::IsMember({"flash", "unfused"}));
  o.options["framework"] = app->add_option("--framework", o.framework,
                  "price attention with this framework's kernel on Hopper (PyTorch SDPA: FlashAttention-2; "
                  "Megatron-Core/TE: cuDNN), and search its selective recomputation and loss (torchtitan: per-op "
                  "checkpointing, PyTorch cross-entropy): " + join_names(framework_preset_names()))
      ->check(CLI::IsMember(framework_preset_names()));
  o.options["compiled"] = app->add_flag("--compiled", o.compiled, "with --framework torchtitan: the run uses torch.compile (fused RMSNorm; the loss compiled too)");
  add_space_options(app, o);
  app->add_flag("--tp-across-nodes", o.tp_across_nodes, "also try tensor parallelism wider than a node");
  app->add_option("--train-tokens", o.train_tokens, "tokens to train: report days and $ for the whole run")
      ->check(real_number(0, 1e18, "tokens"));
  app->add_option("--deadline-days", o.deadline_days, "drop plans that take longer (needs --train-tokens)")
      ->check(real_number(0, 1e5, "days"));
  app->add_option("--budget-usd", o.budget_usd, "drop plans that cost more (needs --train-tokens)")
      ->check(real_number(0, 1e15, "USD"));
  app->add_option("--threads", o.threads, "screening threads (default: all cores)")->transform(whole_number(1, 4096, "threads"));
  app->add_option("--export", o.export_to, "print the best plan as launch arguments")
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchrun", "torchtitan"}));
}

// What the searched job is, where the flags leave it to the --from file: GPU count, global
// batch, precision, and (torchtitan) the framework and whether it is compiled.
void take_from_import(Options& o, const ImportedJob& job) {
  if (!o.given("gpus") && !o.given("max-gpus")) o.gpus = job.plan.gpus();
  if (!o.given("global-batch")) o.global_batch = job.plan.global_batch;
  if (!o.given("precision")) o.precision = to_string(job.plan.precision);
  if (!o.given("cp-comm") && job.plan.cp > 1) o.cp_comm = to_string(job.plan.cp_comm);
  if (!o.given("moe-dispatcher") && !job.plan.experts_like_dense()) o.moe_dispatcher = to_string(job.plan.moe_dispatcher);
  if (!o.given("framework") && job.framework == "torchtitan") {
    o.framework = job.framework;
    if (!o.given("compiled")) o.compiled = job.plan.norm == NormKernel::kFused;
  }
}

SearchOptions search_options(const Options& o) {
  if (o.gpus <= 0 && o.max_gpus <= 0) {
    throw InputError("search: give --gpus N (one GPU count) or --max-gpus N (every power of two up to N)", "e.g. --gpus 256");
  }
  if (o.global_batch <= 0) throw InputError("search: give --global-batch B (sequences per iteration)", "e.g. --global-batch 512");
  if ((o.deadline_days > 0 || o.budget_usd > 0) && o.train_tokens <= 0) {
    throw InputError("--deadline-days and --budget-usd need --train-tokens (the run they apply to)");
  }
  if (o.compiled && o.framework.empty()) {
    throw InputError("--compiled says which RMSNorm a framework runs; it needs --framework",
                     "add --framework torchtitan (the preset with an eager default), or leave --compiled out");
  }
  if (o.recompute_method != "block" && o.recompute_layers == 0) {
    throw InputError("--recompute-num-layers: 0 must be >= 1 with --recompute-method " + o.recompute_method + " (uniform: the layers of each recomputed group; every: one in N)",
                     "give --recompute-method block --recompute-num-layers N to recompute only N layers of each model chunk");
  }
  SearchOptions options;
  const std::map<std::string, Objective> objectives = {{"time", Objective::kTime}, {"cost", Objective::kCost},
      {"effective-time", Objective::kEffectiveTime}, {"effective-cost", Objective::kEffectiveCost}};
  options.objective = objectives.at(o.objective);
  const bool effective = options.objective == Objective::kEffectiveTime || options.objective == Objective::kEffectiveCost;
  if (effective || o.goodput.wanted(o.train_tokens, o.hardware.costs())) options.goodput = o.goodput.resolve(o.train_tokens, o.hardware.costs());
  options.simulate_best = o.simulate_best;
  options.threads = o.threads;
  options.train_tokens = o.train_tokens;
  options.deadline_days = o.deadline_days;
  options.budget_usd = o.budget_usd;
  options.space.global_batch = o.global_batch;
  options.space.max_micro_batch = o.max_micro_batch;
  options.space.tp_across_nodes = o.tp_across_nodes;
  options.space.precision = precisions(o.precision).front();
  options.space.attention = parse_attention(o.attention);
  options.space.partial_recompute_method = parse_recompute_method(o.recompute_method);
  options.space.partial_recompute_layers = o.recompute_layers;
  const FrameworkPreset preset = framework_preset(o.framework);
  options.flash2_attention = !o.framework.empty() && preset.flash2_attention_on_hopper;
  if (!o.framework.empty() && preset.per_op_checkpointing) options.space.selective = Recompute::kSelectiveOp;
  if (!o.framework.empty() && preset.pytorch_cross_entropy) options.space.cross_entropy = o.compiled ? LossKernel::kCompiled : LossKernel::kPytorch;
  // An uncompiled framework's RMSNorm unless --compiled says the run is compiled.
  if (!o.framework.empty() && preset.eager_unless_compiled && !o.compiled) options.space.norm = NormKernel::kEager;
  options.space.tp_comm_overlap = o.tp_comm_overlap || (!o.framework.empty() && preset.tp_comm_overlap_with_sp);
  options.space.ep_comm_overlap = o.ep_comm_overlap;
  return options;
}

// --recompute-modules, --cp-comm and --moe-dispatcher as the plan space takes them. A model with sliding windows has
// no p2p ring (Transformer Engine runs windows with all_gather or a2a): it defaults to all_gather,
// and a list of p2p alone is refused rather than silently searching no CP plan.
void set_space_choices(const Options& o, const ModelSpec& model, PlanSpaceOptions& space) {
  if (o.given("recompute-modules")) {
    space.selective_modules = 0;
    for (RecomputeModules flag : comma_list(o.recompute_modules, parse_recompute_module)) space.selective_modules |= flag;
    ParallelPlan probe;  // Megatron-Core's checks of the modules against the model
    probe.recompute = Recompute::kSelective;
    probe.recompute_modules = space.selective_modules;
    validate_plan(probe, model, "--recompute-modules").throw_if_any("give modules the model has (moe_act, moe and layernorm need experts)");
    if (space.selective != Recompute::kSelective) {
      throw InputError("--recompute-modules choose what Megatron-Core's selective recomputation re-runs; --framework " + o.framework + " checkpoints per op",
                       "leave --recompute-modules out, or search with a Megatron framework");
    }
  }
  if (o.given("zero-bubble")) space.zero_bubble = comma_list(o.zero_bubble, parse_zero_bubble_schedule);
  space.moe_dispatchers = comma_list(o.moe_dispatcher, parse_moe_dispatcher);
  if (!model.moe && space.moe_dispatchers != std::vector<MoeDispatcher>{MoeDispatcher::kAllToAll}) {
    throw InputError("--moe-dispatcher " + o.moe_dispatcher + ": " + model.name + " has no experts to dispatch to",
                     "leave --moe-dispatcher out for a dense model");
  }
  const bool windowed = model.windowed_layers() > 0;
  space.cp_comms = comma_list(windowed && !o.given("cp-comm") ? std::string("all_gather") : o.cp_comm, parse_cp_comm);
  if (windowed && space.cp_comms == std::vector<CpComm>{CpComm::kP2p}) {
    throw InputError("--cp-comm p2p: the p2p ring does not run " + model.name + "'s sliding-window attention",
                     "give --cp-comm all_gather,a2a (what Transformer Engine runs windows with), or leave --cp-comm out");
  }
}

// The imported plan at the searched GPU count, global batch and precision, on the first GPU type;
// a plan that is not valid there is described instead of simulated.
struct ImportedResult {
  std::optional<Prediction> prediction;
  std::string not_simulated;  // why, when there is no prediction
};

ImportedResult simulate_imported(const Options& o, const ModelSpec& model, const ImportedJob& job, bool flash2) {
  ParallelPlan plan = job.plan;
  const int64_t gpus = o.gpus > 0 ? o.gpus : o.max_gpus;
  const int64_t model_parallel = plan.tp * plan.pp * plan.cp;
  if (gpus % model_parallel != 0) return {std::nullopt, "tp x pp x cp (" + std::to_string(model_parallel) + ") does not divide " + std::to_string(gpus) + " GPUs"};
  plan.dp = gpus / model_parallel;
  plan.global_batch = o.global_batch;
  plan.precision = precisions(o.precision).front();
  const ProblemList problems = validate_plan(plan, model, job.file);
  if (!problems.empty()) return {std::nullopt, problems.items().front()};
  const Hardware hw = o.hardware.resolve_gpu(o.hardware.gpu_names().front(), gpus, plan.precision);
  const std::unique_ptr<CostModel> cost = o.hardware.costs().make(hw, plan.precision, flash2);
  return {predict_iteration(model, plan, hw, *cost, SimulationOptions{}), ""};
}

std::string render_imported(const ImportedJob& job, const ImportedResult& r, const SearchReport& report) {
  std::string out = "\nImported plan (" + job.file + "): ";
  if (!r.prediction) return out + "not simulated: " + r.not_simulated + "\n";
  const Prediction& p = *r.prediction;
  out += "dp " + std::to_string(p.plan.dp) + " x tp " + std::to_string(p.plan.tp) + " x pp " + std::to_string(p.plan.pp) +
         " x cp " + std::to_string(p.plan.cp) + ", micro-batch " + std::to_string(p.plan.micro_batch) + ", ZeRO-" +
         std::to_string(p.plan.zero_stage) + ", recompute " + describe_recompute(p.plan) + ": ";
  if (!p.fits) return out + "does not fit (" + p.infeasible_reason + ")\n";
  out += format_fixed(p.tokens_per_s_per_gpu, 1) + " tokens/s per GPU, iteration " + format_fixed(p.iteration_time_s, 3) + " s";
  if (!report.best.empty() && p.tokens_per_s_per_gpu > 0) {
    out += "; the best plan above: " + format_fixed(report.best.front().prediction.tokens_per_s_per_gpu / p.tokens_per_s_per_gpu, 2) +
           "x its tokens/s per GPU";
  }
  return out + "\n";
}

nlohmann::ordered_json imported_json(const ImportedJob& job, const ImportedResult& r) {
  nlohmann::ordered_json j;
  j["file"] = job.file;
  if (!r.prediction) {
    j["not_simulated"] = r.not_simulated;
    return j;
  }
  j["plan"] = plan_to_json(r.prediction->plan);
  const nlohmann::ordered_json result = prediction_result_json(*r.prediction);
  for (const auto& [key, value] : result.items()) j[key] = value;
  return j;
}

// Every precision x GPU type x count asked for, each a search_plans run added to `report`; with
// several precisions a GPU without a tensor-core peak for one is skipped for it, and said so.
void run_searches(const Options& o, const ModelSpec& model, SearchOptions options, SearchReport& report) {
  const std::vector<std::string> gpus = o.hardware.gpu_names();
  if (gpus.empty()) throw InputError("missing --gpu or --cluster", "e.g. --gpu h100-sxm-80gb,a100-sxm-80gb");
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  const std::vector<Precision> searched = precisions(o.precision);
  for (const Precision precision : searched) {
    options.space.precision = precision;
    for (const std::string& gpu : gpus) {
      if (searched.size() > 1 && o.hardware.resolve_gpu(gpu, 1, Precision::kBf16).gpu.peak_flops_per_s(precision) <= 0) {
        report.skipped.push_back(gpu + ": " + to_string(precision) + " not searched (no tensor-core peak for it)");
        continue;
      }
      const Hardware probe = o.hardware.resolve_gpu(gpu, 1, precision);
      for (int64_t count : gpu_counts(o.gpus, o.max_gpus, probe.gpus_per_node)) {
        const Hardware hw = o.hardware.resolve_gpu(gpu, count, precision);
        options.space.gpus = count;
        options.space.gpus_per_node = hw.gpus_per_node;
        const std::string label = gpu + " x " + std::to_string(count) + (searched.size() > 1 ? std::string(" ") + to_string(precision) : "");
        const auto started = std::chrono::steady_clock::now();
        if (show_progress) {
          options.progress = [label, started](double fraction) {
            if (std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) draw_progress(label, fraction);
          };
        }
        for (const std::string& why : zero_bubble_not_searched(model, options.space)) report.skipped.push_back(label + ": " + why);
        report.add(hw, precision, search_plans(model, hw, o.hardware.costs(), options));
        if (show_progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) std::fputs("\n", stderr);
      }
    }
  }
}

}  // namespace

Command add_search_command(CLI::App& root) {
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("search", "rank every valid plan for a model on a cluster");
  add_options(app, *o);
  return {app, [o]() {
            ModelSpec model = o->model.resolve();
            const std::optional<ImportedJob> job = o->from.load(o->model, model, o->gpus);
            if (job) take_from_import(*o, *job);
            SearchOptions options = search_options(*o);
            set_space_choices(*o, model, options.space);
            SearchReport report;
            report.model = model;
            report.objective = options.objective;
            report.train_tokens = o->train_tokens;
            report.goodput = options.goodput;
            run_searches(*o, model, options, report);
            report.finish(static_cast<size_t>(o->top));
            const ImportedResult imported = job ? simulate_imported(*o, model, *job, options.flash2_attention) : ImportedResult{};
            if (o->format.value() == OutputFormat::kJson) {
              nlohmann::ordered_json doc = report.to_json();
              if (job) doc["imported"] = imported_json(*job, imported);
              write_json(std::cout, doc);
            } else {
              std::cout << report.render() << (job ? render_imported(*job, imported, report) : "");
            }
            if (!o->export_to.empty()) {
              if (report.best.empty()) throw InputError("--export: no plan fits, so there is nothing to export");
              const Prediction& best = report.best.front().prediction;
              std::cout << "\n" << export_plan(&best.model, best.plan, best.hardware.gpus_per_node, parse_export_target(o->export_to));
            }
            return 0;
          }};
}

}  // namespace trainsim
