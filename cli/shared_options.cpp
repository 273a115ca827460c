// Binding and resolution of the shared options: the model (--model, --seq-len, --mtp-layers), the
// plan's resolution (--plan, --from, a framework's defaults, the GPU count, the global batch) and
// --save-plan. The plan's own flags are cli/plan_flags.cpp.
#include "cli/shared_options.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/option_checks.hpp"
#include "common/errors.hpp"
#include "common/limits.hpp"
#include "common/nearest_name.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/framework_preset.hpp"
#include "plan/plan_json.hpp"
#include "reports/batch_echo.hpp"

namespace trainsim {

void ModelOptions::add_to(CLI::App& app) {
  app.add_option("--model", model, "built-in model name, our model JSON, or a Hugging Face config.json")->required();
  seq_len_option = app.add_option("--seq-len,--seq-length", seq_len,
                                  "training sequence length (default: the model's; a Hugging Face config's is its maximum context)")
                       ->transform(whole_number(1, limits::kMaxSeqLen, "tokens"));
  mtp_layers_option = app.add_option("--mtp-layers,--mtp-num-layers", mtp_layers,
                                     "multi-token-prediction depths on the last pipeline stage (Megatron-Core's --mtp-num-layers; "
                                     "default: the model's, 1 for deepseek-v3; 0 turns them off)")
                          ->transform(whole_number(0, limits::kMaxMtpLayers, "depths"));
}

ModelSpec ModelOptions::resolve() const {
  ModelSpec m = resolve_model(model, seq_len_option->count() > 0 ? std::optional<int64_t>(seq_len) : std::nullopt);
  if (mtp_layers_option != nullptr && mtp_layers_option->count() > 0) m.mtp_layers = mtp_layers;
  return m;
}

ModelSpec ModelOptions::resolve(int64_t file_seq_len) const {
  if (seq_len_option->count() > 0 || file_seq_len <= 0) return resolve();
  ModelSpec m = resolve_model(model, file_seq_len);
  if (mtp_layers_option != nullptr && mtp_layers_option->count() > 0) m.mtp_layers = mtp_layers;
  return m;
}

std::string ModelOptions::seq_len_source(const ModelSpec& m, const std::string& imported_file) const {
  if (seq_len_option->count() > 0) return "--seq-len";
  if (!imported_file.empty()) return imported_file;
  if (m.source.rfind("Hugging Face config.json", 0) == 0) return kSeqLenFromConfigMaximum;
  return kSeqLenFromModel;
}

namespace {

// The plan keys a framework preset may fill, and the flag that states each.
const std::pair<const char*, const char*> kPresetKeyFlags[] = {
    {"zero_stage", "zero"},           {"sequence_parallel", "sequence-parallel"}, {"tp_comm_overlap", "tp-comm-overlap"},
    {"attention", "attention"},       {"cross_entropy", "cross-entropy"},         {"norm", "norm"},
    {"dp_overlap", "no-dp-overlap"},  {"tp_overlap", "no-tp-overlap"},           {"micro_batch", "micro-batch"},
    {"global_batch", "global-batch"}, {"zero3_collectives", "zero3-collectives"}, {"zero_engine", "zero-engine"},
    {"grad_reduce_in_fp32", "grad-reduce-in-bf16"}, {"softmax_fusion", "no-masked-softmax-fusion"},
    {"bias_gelu_fusion", "no-bias-gelu-fusion"}, {"fp8_params", "fp8_params"}, {"torchao_float8", "torchao_float8"},
    {"host_stack", "host_stack"}};  // the last three: plan-file keys only

// How stderr says what a preset set: "sequence_parallel on", "micro_batch 4 (the local batch at once)".
std::string setting_text(const PresetSetting& s) {
  if (s.key == "recompute") return "recompute selective -> " + s.value + " (" + s.why + ")";
  const std::string value = s.value == "true" ? "on" : s.value == "false" ? "off" : s.value;
  const std::string why = s.key == "norm" ? s.why + "; --norm fused for a compiled run" : s.why;
  return s.key + " " + value + (why.empty() ? "" : " (" + why + ")");
}

// The preset's defaults for what the user left out; says on stderr what it set and why.
template <typename Stated>
void apply_framework(const FrameworkPreset& preset, ParallelPlan& p, const Stated& stated) {
  StatedKnobs knobs;
  for (const auto& [key, flag] : kPresetKeyFlags) {
    if (stated(flag, key)) knobs.keys.push_back(key);
  }
  // A compiled run: the norm stated fused (compiling fuses RMSNorm).
  knobs.compiled = stated("norm", "norm") && p.norm == NormKernel::kFused;
  std::string list;
  for (const PresetSetting& s : apply_framework_preset(preset, p, knobs)) list += (list.empty() ? "" : ", ") + setting_text(s);
  std::cerr << "framework " << preset.name << ": " << (list.empty() ? "nothing left to default" : list) << " (" << preset.source
            << ")\n";
}

}  // namespace

bool PlanOptions::given(const std::string& name) const {
  const auto it = options.find(name);
  return it != options.end() && it->second->count() > 0;
}

namespace {

// dp from the GPU count when neither a flag nor the plan file states it; else the count must match.
void fit_dp_to_gpus(ParallelPlan& p, int64_t gpus, bool dp_free, bool gpus_given, const ImportedJob* imported) {
  const int64_t model_parallel = p.tp * p.pp * p.cp;
  if (dp_free) {
    if (gpus % model_parallel != 0) {
      throw InputError("--gpus: gpus (" + std::to_string(gpus) + ") must be a multiple of tp x pp x cp (" +
                           std::to_string(model_parallel) + ")",
                       "choose tp, pp and cp whose product divides the GPU count, or give --dp");
    }
    p.dp = gpus / model_parallel;
  } else if (p.gpus() != gpus && !gpus_given && imported != nullptr) {
    throw InputError("the plan needs dp x tp x pp x cp = " + std::to_string(p.gpus()) + " GPUs, but " + imported->file +
                         " launches " + std::to_string(gpus),
                     "leave --dp out, or give --gpus");
  } else if (p.gpus() != gpus && !gpus_given) {
    throw InputError("the plan needs dp x tp x pp x cp = " + std::to_string(p.gpus()) + " ranks, but mpirun started " +
                         std::to_string(gpus),
                     "run under `mpirun -np " + std::to_string(p.gpus()) + " trainsim run ...`");
  } else if (p.gpus() != gpus) {
    throw InputError("--gpus: dp x tp x pp x cp (" + std::to_string(p.dp) + " x " + std::to_string(p.tp) + " x " +
                         std::to_string(p.pp) + " x " + std::to_string(p.cp) + " = " + std::to_string(p.gpus()) +
                         ") must equal gpus (" + std::to_string(gpus) + ")",
                     "leave --dp out to have it derived from --gpus");
  }
}

// The global batch when none is stated, and the rule that chose it. With pp > 1 the fewest
// micro-batches per DP rank that fill the pipeline: pp (1F1B's warm-up holds up to pp micro-batches
// in flight on the first stage, and Megatron-LM's interleaved schedule needs a multiple of pp:
// megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving).
std::pair<int64_t, std::string> default_global_batch(const ParallelPlan& p, bool filled_pipeline) {
  const std::string local = "dp " + std::to_string(p.dp) + " x micro-batch " + std::to_string(p.micro_batch);
  const std::string yours = "; --global-batch or --global-batch-tokens sets yours";
  if (p.pp == 1 || !filled_pipeline) return {p.dp * p.micro_batch, local + ", one micro-batch per DP rank" + yours};
  return {p.dp * p.micro_batch * p.pp, local + " x pp " + std::to_string(p.pp) + " micro-batches, the fewest that fill the pipeline" + yours};
}

}  // namespace

// --global-batch-tokens: whole sequences of the model's length, or an error naming the nearest
// token counts that are.
int64_t batch_of_tokens(int64_t tokens, int64_t seq_len) {
  if (tokens % seq_len == 0) return tokens / seq_len;
  const int64_t below = tokens / seq_len * seq_len, above = below + seq_len;
  const std::string text_below = below > 0 ? std::to_string(below) + " (" + std::to_string(below / seq_len) + " sequences) or " : "";
  throw InputError("--global-batch-tokens: " + std::to_string(tokens) + " tokens must be a whole number of sequences of " +
                       std::to_string(seq_len) + " tokens (seq len)",
                   "the nearest that are: " + text_below + std::to_string(above) + " (" + std::to_string(above / seq_len) +
                       " sequences); or give --global-batch in sequences");
}


ParallelPlan PlanOptions::resolve(const ModelSpec& model, const ImportedJob* imported, std::string* global_batch_default) const {
  if (imported != nullptr && given("plan")) {
    throw InputError("--plan and --from both give the plan", "give one of them; flags on top override either");
  }
  std::vector<std::string> defaulted = {"dp", "tp", "pp", "cp", "ep", "vpp", "micro_batch", "global_batch"};
  ParallelPlan p = given("plan") ? load_plan_file(plan_path, &(defaulted = {})) : ParallelPlan{};
  if (imported != nullptr) {
    p = imported->plan;
    defaulted = imported->defaulted;
  }
  const bool from_file = given("plan") || imported != nullptr;
  auto is_defaulted = [&](const std::string& key) {
    return std::find(defaulted.begin(), defaulted.end(), key) != defaulted.end();
  };
  apply_flags(p);
  // Keys the user stated (a flag, or the plan file): a framework preset never overrides them.
  auto stated = [&](const char* flag, const char* key) { return given(flag) || (from_file && !is_defaulted(key)); };

  const int64_t file_gpus = imported != nullptr ? imported->gpus : 0;
  const int64_t gpus = given("gpus") ? this->gpus : file_gpus > 0 ? file_gpus : default_gpus;
  if (gpus > 0) fit_dp_to_gpus(p, gpus, !given("dp") && is_defaulted("dp"), given("gpus"), imported);
  if (given("framework")) apply_framework(framework_preset(framework), p, stated);
  if (given("global-batch-tokens")) {
    if (given("global-batch")) throw InputError("--global-batch and --global-batch-tokens both give the global batch", "give one of them");
    p.global_batch = batch_of_tokens(parse_token_count(global_batch_tokens).value_or(0), model.seq_len);
  } else if (!given("global-batch") && is_defaulted("global_batch")) {
    auto [batch, rule] = default_global_batch(p, filled_pipeline_default);
    p.global_batch = batch;
    if (global_batch_default != nullptr) *global_batch_default = rule;
  }
  const std::string where = imported != nullptr ? imported->file : given("plan") ? plan_path : "options";
  validate_plan(p, model, where, rules)
      .throw_if_any("`trainsim " + command_name + " --help` lists the plan options; docs/plan-options.md what each means, "
                    "docs/model-math.md the memory conventions");
  return p;
}

void SavePlanOptions::add_to(CLI::App& app, bool ranked) {
  app.add_option("--save-plan", path,
                 ranked ? "write the #1 plan (or --save-plan-rank N's) as plan JSON to this file: what predict --plan reads"
                        : "write the resolved plan as plan JSON to this file: what --plan reads");
  if (ranked) {
    rank_option = app.add_option("--save-plan-rank", rank, "which ranked plan --save-plan writes (default 1, the best)")
                      ->transform(whole_number(1, 1000000, "the rank in the table; --top bounds it"));
  }
}

void SavePlanOptions::write(const std::vector<ParallelPlan>& ranked) const {
  if (path.empty()) {
    if (rank_option != nullptr && rank_option->count() > 0) throw InputError("--save-plan-rank needs --save-plan FILE", "e.g. --save-plan plan.json");
    return;
  }
  if (ranked.empty()) throw InputError("--save-plan: no plan fits, so there is none to save", "relax the search (more GPUs, --zero, --recompute)");
  if (rank > static_cast<int64_t>(ranked.size())) {
    throw InputError("--save-plan-rank: " + std::to_string(rank) + " is beyond the " + std::to_string(ranked.size()) + " plans ranked",
                     "give a rank from 1 to " + std::to_string(ranked.size()) + ", or raise --top");
  }
  save_plan_json(ranked[static_cast<size_t>(rank - 1)], path);
}

}  // namespace trainsim
