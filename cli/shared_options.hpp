// Options shared by model, predict, search and validate (INTERFACE.md): the model (`--model`,
// `--seq-len`), the plan (`--dp --tp --pp ... --plan PATH`, `--gpus`) and `--format`.
// They bind to CLI11 here and resolve into validated ModelSpec / ParallelPlan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>
#include <string>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "sim/cost_model_choice.hpp"
#include "sim/hardware_catalog.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace trainsim {

struct ModelOptions {
  std::string model;
  int64_t seq_len = 0;
  CLI::Option* seq_len_option = nullptr;
  int64_t mtp_layers = 0;  // --mtp-layers: the model's multi-token-prediction depths instead of its own
  CLI::Option* mtp_layers_option = nullptr;
  void add_to(CLI::App& app);
  ModelSpec resolve() const;
  // With `seq_len` (> 0) as the sequence length unless --seq-len states one.
  ModelSpec resolve(int64_t seq_len) const;
  // Where `model`'s sequence length came from: --seq-len, the --from file (`imported_file`, when
  // it set one), a Hugging Face config's max_position_embeddings, or the model's own.
  std::string seq_len_source(const ModelSpec& model, const std::string& imported_file = "") const;
};

struct ImportedJob;

struct PlanOptions {
  std::string plan_path;
  int64_t gpus = 0;
  int64_t default_gpus = 0;  // used when --gpus is left out (run: the MPI world size)
  PlanRules rules = PlanRules::kFrameworks;  // run --backend cpu: the CPU runtime's (validate_plan)
  std::map<std::string, int64_t> sizes;  // dp, tp, pp, vpp, cp, ep, micro-batch, global-batch, zero
  std::string recompute, recompute_method, schedule, precision, fp8_recipe, attention, cross_entropy, norm, cp_comm, moe_dispatcher, zero3_collectives, zero_engine;
  int64_t recompute_layers = 1;  // --recompute-num-layers
  std::string recompute_modules;  // --recompute-modules core_attn,moe_act
  std::string pipeline_layout;    // --pipeline-layout 4,4,4,1: layers per virtual stage
  std::string cuda_graphs;        // --cuda-graphs attn,moe_router
  std::string framework;  // --framework: a preset's defaults for what the flags and plan leave out
  std::string global_batch_tokens;  // --global-batch-tokens 4M: the global batch in tokens
  // model, predict: without a stated global batch, the fewest micro-batches that fill the pipeline
  // (pp per DP rank) rather than one (run keeps dp x micro-batch: its ranks train what it states).
  bool filled_pipeline_default = false;
  std::string command_name;  // the subcommand's, for hints
  bool sequence_parallel = false;
  bool no_dp_overlap = false;
  bool no_tp_overlap = false;
  bool grad_reduce_in_bf16 = false;
  bool no_masked_softmax_fusion = false;
  bool no_bias_gelu_fusion = false;
  bool te_op_fuser = false;
  int64_t lora_rank = 0;
  int64_t cpu_offload_layers = 0;
  bool tp_comm_overlap = false;
  bool ep_comm_overlap = false;
  double moe_imbalance = 1.0, moe_capacity_factor = 0.0;
  std::map<std::string, CLI::Option*> options;
  void add_to(CLI::App& app);
  bool given(const std::string& name) const;
  // The plan from --plan (if any) with the flags on top, the --framework preset's defaults for
  // what neither states (printed on stderr), dp from --gpus when left out, a global batch from
  // --global-batch-tokens, or by default dp x micro-batch (x pp with filled_pipeline_default) when
  // none is given; validated against the model. `imported` (--from) stands in for --plan.
  // `global_batch_default` receives the rule of a defaulted global batch ("" when stated).
  ParallelPlan resolve(const ModelSpec& model, const ImportedJob* imported = nullptr,
                       std::string* global_batch_default = nullptr) const;

 private:
  void apply_flags(ParallelPlan& plan) const;  // the plan flags given, over `plan`
};

// --global-batch-tokens: the sequences of `seq_len` tokens that make `tokens`; InputError naming
// the nearest token counts that are whole sequences.
int64_t batch_of_tokens(int64_t tokens, int64_t seq_len);

// `--gpu --cluster --gpus-per-node --inter-node-gbps --price` and the what-ifs on the GPU's figures
// (`--peak-tflops --hbm-gb-per-s --memory-gib --nvlink-gb-per-s --nvlink-domain`); the GPU count
// comes from the plan.
struct HardwareOptions {
  std::string gpu, cluster;
  int64_t gpus_per_node = 8, nvlink_domain = 0;
  double inter_node_gbps = 0, nvlink_gb_per_s = 0;
  double peak_tflops = 0, hbm_gb_per_s = 0, memory_gib = 0;
  std::string price;  // --price: one USD per GPU-hour, or GPU=USD per type (cli/gpu_prices.hpp)
  std::string profile_path;
  bool allow_extrapolation = false;
  std::map<std::string, CLI::Option*> options;
  void add_to(CLI::App& app);
  bool given(const std::string& name) const;
  Hardware resolve(const ParallelPlan& plan) const;
  // For search: one GPU type of a comma-separated --gpu list, `gpus` of them.
  Hardware resolve_gpu(const std::string& gpu_name, int64_t gpus, Precision precision) const;
  std::vector<std::string> gpu_names() const;  // the --gpu list (or the cluster's GPU)
  // The datasheet model, or the --profile's measurements (loaded once).
  const CostModelChoice& costs() const;

 private:
  // The what-if options applied to `hw` (its GPU's figures and, for --nvlink-domain, its node).
  void apply_what_ifs(Hardware& hw) const;
  mutable std::optional<CostModelChoice> costs_;
  std::vector<std::string> compared_gpus_;  // resolve_gpu's: every --gpu type, which --price must match
};

// `--save-plan FILE` (predict, search) and `--save-plan-rank N` (search): the plan as plan JSON,
// the file `--plan` reads, so a search's choice goes to predict without retyping.
struct SavePlanOptions {
  std::string path;
  int64_t rank = 1;
  CLI::Option* rank_option = nullptr;
  void add_to(CLI::App& app, bool ranked);
  // Writes ranked[rank - 1] (best first); nothing without --save-plan.
  void write(const std::vector<ParallelPlan>& ranked) const;
  // A search's ranked plans (each with a `prediction.plan`).
  template <typename Ranked>
  void write_best(const std::vector<Ranked>& best) const {
    std::vector<ParallelPlan> plans;
    for (const auto& b : best) plans.push_back(b.prediction.plan);
    write(plans);
  }
};

enum class OutputFormat { kTable, kJson };
struct FormatOption {
  std::string format = "table";
  void add_to(CLI::App& app);
  OutputFormat value() const { return format == "json" ? OutputFormat::kJson : OutputFormat::kTable; }
};

}  // namespace trainsim
