// Turning a search request into search options and the plan space's choices.
#include "sim/search_request.hpp"

#include <algorithm>
#include <map>

#include "common/errors.hpp"
#include "plan/framework_preset.hpp"
#include "plan/framework_support.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

namespace {

void check(const SearchRequest& r) {
  if (r.gpus <= 0 && r.max_gpus <= 0) {
    throw InputError("search: give --gpus N (one GPU count) or --max-gpus N (every power of two up to N)", "e.g. --gpus 256");
  }
  if (r.global_batch <= 0) throw InputError("search: give --global-batch B (sequences per iteration)", "e.g. --global-batch 512");
  if ((r.deadline_days > 0 || r.budget_usd > 0) && r.train_tokens <= 0) {
    throw InputError("--deadline-days and --budget-usd need --train-tokens (the run they apply to)");
  }
  if (r.compiled && r.framework.empty()) {
    throw InputError("--compiled says which RMSNorm a framework runs; it needs --framework",
                     "add --framework torchtitan (the preset with an eager default), or leave --compiled out");
  }
  if (r.recompute_method != "block" && r.recompute_layers == 0) {
    throw InputError("--recompute-num-layers: 0 must be >= 1 with --recompute-method " + r.recompute_method + " (uniform: the layers of each recomputed group; every: one in N)",
                     "give --recompute-method block --recompute-num-layers N to recompute only N layers of each model chunk");
  }
}

// The framework's kernels on every candidate: its preset (the generic one, which changes nothing,
// without --framework) applied to a probe plan with TP, SP and selective recomputation, which its
// choices depend on. What the search sets itself (the layout, --attention) or leaves at the plan's
// default (the overlaps) is stated, so the preset leaves it.
void apply_framework(const SearchRequest& r, SearchOptions& options) {
  const FrameworkPreset preset = framework_preset(r.framework);
  options.flash2_attention = preset.flash2_attention_on_hopper;
  ParallelPlan probe;
  probe.tp = 2;
  probe.sequence_parallel = true;
  probe.recompute = options.space.selective;
  const StatedKnobs searched{{"zero_stage", "sequence_parallel", "attention", "dp_overlap", "tp_overlap", "micro_batch", "global_batch"},
                             r.compiled};
  apply_framework_preset(preset, probe, searched);
  options.space.selective = probe.recompute;
  options.space.cross_entropy = probe.cross_entropy;
  options.space.norm = probe.norm;
  options.space.zero3_collectives = probe.zero3_collectives;
  options.space.zero_engine = probe.zero_engine;
  options.space.host_stack = probe.host_stack;
  options.space.tp_comm_overlap = r.tp_comm_overlap || probe.tp_comm_overlap;
}

// Each option naming a framework, with the framework's family (those without rules left out).
std::vector<std::pair<std::string, FrameworkFamily>> framework_options(const SearchRequest& r) {
  std::vector<std::pair<std::string, FrameworkFamily>> out;
  const std::pair<std::string, std::string> named[] = {
      {"--framework", r.framework}, {"--from", r.from_format}, {"--export", r.export_target}};
  for (const auto& [option, name] : named) {
    if (const std::optional<FrameworkFamily> f = framework_family(name)) out.emplace_back(option + " " + name, *f);
  }
  return out;
}

}  // namespace

std::vector<std::string> framework_restrictions(const SearchRequest& r) {
  std::vector<std::string> out;
  for (const auto& [option, family] : framework_options(r)) {
    out.push_back(option + ": plans " + framework_family_name(family) + " cannot run are left out");
  }
  return out;
}

Schedule parse_zero_bubble_schedule(const std::string& name) {
  const Schedule s = parse_schedule(name);
  if (!is_zero_bubble(s)) throw InputError("schedule \"" + name + "\" is not one of: zb-1p, zb-2p, zb-v");
  return s;
}

bool is_effective(Objective objective) { return objective == Objective::kEffectiveTime || objective == Objective::kEffectiveCost; }

std::vector<Precision> searched_precisions(const SearchRequest& request) { return comma_list(request.precision, parse_precision); }

std::vector<int64_t> searched_gpu_counts(int64_t gpus, int64_t max_gpus, int64_t per_node) {
  if (max_gpus <= 0) return {gpus};
  std::vector<int64_t> counts;  // powers of two up to --max-gpus (whole nodes above one node)
  for (int64_t n = 1; n <= max_gpus; n *= 2) {
    if (n >= per_node || per_node % n == 0) counts.push_back(n);
  }
  return counts;
}

SearchOptions search_options_for(const SearchRequest& r) {
  check(r);
  SearchOptions options;
  const std::map<std::string, Objective> objectives = {{"time", Objective::kTime}, {"cost", Objective::kCost},
      {"effective-time", Objective::kEffectiveTime}, {"effective-cost", Objective::kEffectiveCost}};
  options.objective = objectives.at(r.objective);
  options.simulate_best = r.simulate_best;
  if (r.simulate_all) options.screen_margin = -1.0;
  options.threads = r.threads;
  options.train_tokens = r.train_tokens;
  options.deadline_days = r.deadline_days;
  options.budget_usd = r.budget_usd;
  options.space.global_batch = r.global_batch;
  options.space.max_micro_batch = r.max_micro_batch;
  options.space.tp_across_nodes = r.tp_across_nodes;
  options.space.uneven_pipeline = r.uneven_pipeline;
  options.space.precision = searched_precisions(r).front();
  options.space.attention = parse_attention(r.attention);
  options.space.partial_recompute_method = parse_recompute_method(r.recompute_method);
  options.space.partial_recompute_layers = r.recompute_layers;
  apply_framework(r, options);
  for (const auto& [option, family] : framework_options(r)) {
    if (std::find(options.space.frameworks.begin(), options.space.frameworks.end(), family) == options.space.frameworks.end()) {
      options.space.frameworks.push_back(family);
    }
  }
  options.space.ep_comm_overlap = r.ep_comm_overlap;
  options.space.cuda_graphs = parse_cuda_graph_list(r.cuda_graphs);
  options.space.te_op_fuser = r.te_op_fuser;
  options.space.lora_rank = r.lora_rank;
  return options;
}

void set_space_choices(const SearchRequest& r, const ModelSpec& model, PlanSpaceOptions& space) {
  if (r.recompute_modules_given) {
    space.selective_modules = 0;
    for (RecomputeModules flag : comma_list(r.recompute_modules, parse_recompute_module)) space.selective_modules |= flag;
    ParallelPlan probe;  // Megatron-Core's checks of the modules against the model
    probe.recompute = Recompute::kSelective;
    probe.recompute_modules = space.selective_modules;
    validate_plan(probe, model, "--recompute-modules").throw_if_any("give modules the model has (moe_act, moe and layernorm need experts)");
    if (space.selective != Recompute::kSelective) {
      throw InputError("--recompute-modules choose what Megatron-Core's selective recomputation re-runs; --framework " + r.framework + " checkpoints per op",
                       "leave --recompute-modules out, or search with a Megatron framework");
    }
  }
  if (r.zero_bubble_given) space.zero_bubble = comma_list(r.zero_bubble, parse_zero_bubble_schedule);
  space.moe_dispatchers = comma_list(r.moe_dispatcher, parse_moe_dispatcher);
  if (!model.moe && space.moe_dispatchers != std::vector<MoeDispatcher>{MoeDispatcher::kAllToAll}) {
    throw InputError("--moe-dispatcher " + r.moe_dispatcher + ": " + model.name + " has no experts to dispatch to",
                     "leave --moe-dispatcher out for a dense model");
  }
  const bool windowed = model.windowed_layers() > 0;
  space.cp_comms = comma_list(windowed && !r.cp_comm_given ? std::string("all_gather") : r.cp_comm, parse_cp_comm);
  if (windowed && space.cp_comms == std::vector<CpComm>{CpComm::kP2p}) {
    throw InputError("--cp-comm p2p: the p2p ring does not run " + model.name + "'s sliding-window attention",
                     "give --cp-comm all_gather,a2a (what Transformer Engine runs windows with), or leave --cp-comm out");
  }
}

ImportedPlanResult simulate_imported_plan(const SearchRequest& r, const ModelSpec& model, ParallelPlan plan, const std::string& where,
                                          const std::function<Hardware(int64_t, Precision)>& hardware, const CostModelChoice& costs,
                                          bool flash2_attention) {
  const int64_t gpus = r.gpus > 0 ? r.gpus : r.max_gpus;
  const int64_t model_parallel = plan.tp * plan.pp * plan.cp;
  if (gpus % model_parallel != 0) return {std::nullopt, "tp x pp x cp (" + std::to_string(model_parallel) + ") does not divide " + std::to_string(gpus) + " GPUs"};
  plan.dp = gpus / model_parallel;
  plan.global_batch = r.global_batch;
  plan.precision = searched_precisions(r).front();
  const ProblemList problems = validate_plan(plan, model, where);
  if (!problems.empty()) return {std::nullopt, problems.items().front()};
  const Hardware hw = hardware(gpus, plan.precision);
  const std::unique_ptr<CostModel> cost = costs.make(hw, plan.precision, flash2_attention);
  return {predict_iteration(model, plan, hw, *cost, SimulationOptions{}), ""};
}

}  // namespace trainsim
