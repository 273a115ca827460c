// A search as asked: the values of `search`'s options (lists comma-separated, as given), checked
// and turned into the SearchOptions search_plans takes. The framework's kernels go on every
// candidate (its preset applied through apply_framework_preset), the "also try" lists into the
// plan space. Messages name the option they are about. Goodput, progress and hardware are the
// caller's. Also: the imported plan (--from) simulated at the searched size, beside the best.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "sim/cost_model_choice.hpp"
#include "sim/search.hpp"

namespace trainsim {

struct SearchRequest {
  int64_t gpus = 0, max_gpus = 0;  // one GPU count, or every power of two up to max_gpus
  int64_t global_batch = 0, max_micro_batch = 16, simulate_best = 200;
  int threads = 0;
  bool simulate_all = false;  // --simulate-all: no early stop (SearchOptions::screen_margin < 0)
  std::string objective = "time";  // time, cost, effective-time, effective-cost
  std::string precision = "bf16", attention = "flash", framework, recompute_method = "uniform";
  std::string cp_comm = "p2p", moe_dispatcher = "alltoall", recompute_modules, zero_bubble;
  std::string cuda_graphs;  // --cuda-graphs: scopes every candidate's CUDA graphs capture ("" / none: none)
  int64_t recompute_layers = 1;
  bool compiled = false, tp_comm_overlap = false, ep_comm_overlap = false, tp_across_nodes = false, uneven_pipeline = true;
  int64_t lora_rank = 0;     // --lora-rank: every candidate fine-tunes LoRA adapters of this rank
  bool te_op_fuser = false;  // --te-op-fuser: every candidate's experts through Transformer Engine's op fuser
  double train_tokens = 0, deadline_days = 0, budget_usd = 0;
  // The job's framework besides --framework: the format of --from ("megatron", "deepspeed",
  // "torchtitan", "nemo") and the --export target; each leaves out the plans it cannot run.
  std::string from_format, export_target;
  // Given on the command line (not the default): --cp-comm, --recompute-modules, --zero-bubble.
  bool cp_comm_given = false, recompute_modules_given = false, zero_bubble_given = false;
};

// Checks the request (InputError naming the option) and sets everything but the model-dependent
// choices of set_space_choices: the objective, the budget, the space's sizes, the framework's
// kernels and the frameworks that must run the plans.
SearchOptions search_options_for(const SearchRequest& request);

// What restricts the plan space to a framework's, for the report's header: "--framework
// megatron-core: plans Megatron-LM cannot run are left out"; empty when nothing does.
std::vector<std::string> framework_restrictions(const SearchRequest& request);

// The plan space's choices that depend on the model: recompute modules (checked against it), Zero
// Bubble schedules, MoE dispatchers (only for a model with experts), CP exchanges (all_gather by
// default for a model with sliding windows, which the p2p ring does not run).
void set_space_choices(const SearchRequest& request, const ModelSpec& model, PlanSpaceOptions& space);

// A Zero Bubble schedule's name (an item of --zero-bubble): zb-1p, zb-2p or zb-v; else InputError.
Schedule parse_zero_bubble_schedule(const std::string& name);

bool is_effective(Objective objective);  // over goodput: effective-time, effective-cost
std::vector<Precision> searched_precisions(const SearchRequest& request);
// The GPU counts searched: `gpus`, or every power of two up to `max_gpus` (whole nodes above one).
std::vector<int64_t> searched_gpu_counts(int64_t gpus, int64_t max_gpus, int64_t gpus_per_node);

// The imported plan at the searched GPU count (the first), global batch and first precision.
struct ImportedPlanResult {
  std::optional<Prediction> prediction;
  std::string not_simulated;  // why, when there is no prediction: not valid at that size
};
// `hardware(gpus, precision)` gives the first GPU type's cluster; `where` names the plan's file.
ImportedPlanResult simulate_imported_plan(const SearchRequest& request, const ModelSpec& model, ParallelPlan plan,
                                          const std::string& where, const std::function<Hardware(int64_t, Precision)>& hardware,
                                          const CostModelChoice& costs, bool flash2_attention);

}  // namespace trainsim
