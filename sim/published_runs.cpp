// Reading published-run files, with the defaults of docs/validation.md for what sources omit.
// The model's, the hardware's and a recipe's are filled into a copy of each run's JSON before it is
// read (sim/published_run_defaults.cpp); the
// plan is read as stated, then takes the format's defaults and its framework's (the preset of the
// run's era, through apply_framework_preset). Every default is named in `defaults_used`.
#include "sim/published_runs.hpp"

#include <algorithm>
#include <map>

#include "common/json_reader.hpp"
#include "model/model_json.hpp"
#include "plan/framework_preset.hpp"
#include "plan/plan_json.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/published_run_defaults.hpp"
#include "sim/published_run_era.hpp"
#include "sim/published_run_options.hpp"

namespace trainsim {

namespace {

using nlohmann::json;

bool is_null(const json& object, const char* key) { return !object.contains(key) || object[key].is_null(); }

int64_t int_or(const json& object, const char* key, int64_t fallback) { return stated_size(object, key, fallback); }

// The source did not say how many model chunks: the fewest (> 1) with which pp x vpp splits the
// layers evenly, the embedding and the loss counted as a layer each if need be (Megatron-Core's
// accounting; Zero Bubble's code asserts an even split after padding the layers by 2), else 2.
int64_t least_interleaving(int64_t layers, int64_t pp) {
  // Sizes past 2^20 are refused by the model and plan checks; searching them would overflow or
  // take ~layers steps (found by fuzz/).
  if (layers > (int64_t{1} << 20) || pp > (int64_t{1} << 20)) return 2;
  for (int64_t vpp = 2; pp > 0 && pp * vpp <= layers + 2; ++vpp) {
    if (layers % (pp * vpp) == 0 || (layers + 2) % (pp * vpp) == 0) return vpp;
  }
  return 2;
}

std::string unsupported_reason(const PublishedRun& run, const std::string& where) {
  if (!gpu_in_catalog(run.gpu)) return "GPU " + run.gpu + " is not in the catalog (`trainsim catalog` lists the GPUs)";
  if (find_gpu(run.gpu).peak_flops_per_s(run.plan.precision) <= 0) {
    return "precision " + std::string(to_string(run.plan.precision)) + ": " + run.gpu + " has no tensor cores for it";
  }
  ProblemList problems = validate_model(run.model, where + "/model");
  // The plan's checks compute with the model's sizes: only once those are valid (found by fuzz/).
  if (problems.empty()) problems.add_all(validate_plan(run.plan, run.model, where + "/plan"));
  // plan.gpus() only once validate_plan has bounded the sizes: the product may overflow (found by fuzz/).
  if (run.gpus > 0 && problems.empty() && run.plan.gpus() != run.gpus) {
    return "dp x tp x pp x cp (" + std::to_string(run.plan.gpus()) + ") is not hardware.gpus (" + std::to_string(run.gpus) + ")";
  }
  std::string reason;
  for (const std::string& p : problems.items()) reason += (reason.empty() ? "" : "; ") + p.substr(p.find(": ") + 2);
  return reason;
}

void read_measured(JsonObjectReader& m, PublishedRun& run) {
  run.measured_oom = m.optional_bool("oom").value_or(false);
  const std::optional<double> tokens = m.optional_number("tokens_per_s_per_gpu", 0.0);
  if (!run.measured_oom && (!tokens || *tokens <= 0)) {
    m.add_problem("tokens_per_s_per_gpu", "must be given and > 0 unless the run went out of memory (\"oom\": true)");
  }
  run.measured_tokens_per_s_per_gpu = tokens.value_or(0.0);
  run.measured_iteration_s = m.optional_number("iteration_s", 0.0);
  run.measured_model_tflops_per_gpu = m.optional_number("model_tflops_per_gpu", 0.0);
  run.measured_memory_gib = m.optional_number("memory_gib", 0.0);
  run.memory_kind = m.optional_choice("memory_kind", {"reserved_max", "nvidia_smi_max", "reported_peak"}).value_or("");
  m.reject_unknown_keys();
}

// `options`: a list of names; those the simulator does not model are listed apart.
void read_options(const json& j, JsonObjectReader& r, PublishedRun& run) {
  const json* options = j.is_object() && j.contains("options") ? &j["options"] : nullptr;
  if (options == nullptr || options->is_null()) return;
  r.accept("options");
  if (!options->is_array()) r.add_problem("options", "must be a list of option names");
  for (const json& o : options->is_array() ? *options : json::array()) {
    if (!o.is_string()) {
      r.add_problem("options", "every option must be a string (got " + o.dump() + ")");
      continue;
    }
    run.options.push_back(o.get<std::string>());
    if (!option_is_modeled(run.options.back())) run.options_not_modeled.push_back(run.options.back());
  }
}

// The plan keys a run may leave out, in the order their defaults are listed.
const char* const kDefaultedPlanKeys[] = {"vpp", "micro_batch", "global_batch", "zero_stage", "recompute", "sequence_parallel", "lora_rank"};

// The format's own defaults and what the run's options state: the chunks of an interleaved or ZB-V
// schedule, ZeRO-1 for the distributed optimizer, the recomputation, TP and EP communication
// overlap. Each is stated from then on (the framework's preset leaves it); `filled` gets the
// defaults (plan key -> value).
void apply_format_defaults(const json& j, ParallelPlan& plan, StatedKnobs& stated, std::map<std::string, std::string>& filled) {
  const json& pj = j["plan"];
  const auto fill = [&](const char* key, const std::string& value) {
    filled[key] = value;
    stated.keys.push_back(key);
  };
  if (!stated.has("vpp") && plan.schedule == Schedule::kZeroBubbleV) fill("vpp", "2");  // ZB-V: two chunks per rank (read_plan)
  if (!stated.has("vpp") && plan.schedule == Schedule::kInterleaved) {
    const json none;
    plan.vpp = least_interleaving(int_or(j.contains("model") ? j["model"] : none, "layers", 0), int_or(pj, "pp", 1));
    fill("vpp", std::to_string(plan.vpp));
  }
  if (!stated.has("zero_stage") && (has_option(j, "distributed_optimizer") || has_option(j, "zero1"))) {
    plan.zero_stage = 1;
    fill("zero_stage", "1");
  }
  // A recipe's recompute_modules option states selective recomputation of those modules (also
  // where the plan states "selective" and the option says which modules).
  if (const auto v = option_value(j, "recompute_modules");
      v && is_modeled_setting("recompute_modules:" + *v) && !stated.has("recompute_modules") &&
      (!stated.has("recompute") || plan.recompute == Recompute::kSelective)) {
    plan.recompute = Recompute::kSelective;
    plan.recompute_modules = parse_recompute_modules(comma_list(*v));
    if (!stated.has("recompute")) stated.keys.push_back("recompute");
    stated.keys.push_back("recompute_modules");
  }
  if (!stated.has("recompute")) {
    plan.recompute = has_option(j, "selective_recompute_per_op") ? Recompute::kSelective : Recompute::kNone;
    fill("recompute", to_string(plan.recompute));
  }
  if (has_option(j, "tp_comm_overlap") || has_option(j, "async_tp")) {
    plan.tp_comm_overlap = true;
    stated.keys.push_back("tp_comm_overlap");
  }
  if (has_option(j, "overlap_moe_expert_parallel_comm")) plan.ep_comm_overlap = true;
  // GPT-NeoX's fusion switches, named when on: the fused scale-mask-softmax and bias-GELU.
  if (has_option(j, "scaled_upper_triang_masked_softmax_fusion") || has_option(j, "scaled_masked_softmax_fusion")) {
    plan.softmax_fusion = true;
    stated.keys.push_back("softmax_fusion");
  }
  if (has_option(j, "bias_gelu_fusion")) {
    plan.bias_gelu_fusion = true;
    stated.keys.push_back("bias_gelu_fusion");
  }
  if (stated_te_op_fuser(j)) {
    plan.te_op_fuser = true;
    stated.keys.push_back("te_op_fuser");
  }
  if (const auto lora = stated_lora_rank(j)) {
    plan.lora_rank = lora->rank;
    fill("lora_rank", std::to_string(lora->rank) + " (Megatron-Bridge's LoRA dim: " + lora->source + ")");
  }
  if (const auto v = option_value(j, "cpu_offloading_num_layers"); v && is_modeled_setting("cpu_offloading_num_layers:" + *v)) {
    plan.cpu_offload_layers = std::stoll(*v);
    stated.keys.push_back("cpu_offload_layers");
  }
  // "key:value" recipe settings (is_modeled_setting): each states its plan key.
  if (const auto v = option_value(j, "moe_token_dispatcher"); v && is_modeled_setting("moe_token_dispatcher:" + *v)) {
    plan.moe_dispatcher = parse_moe_dispatcher(*v);
    stated.keys.push_back("moe_dispatcher");
  }
  if (const auto graphs = stated_cuda_graphs(j)) {
    plan.cuda_graphs = *graphs;
    stated.keys.push_back("cuda_graphs");
  }
  if (const auto v = option_value(j, "expert_tensor_parallel"); v && is_modeled_setting("expert_tensor_parallel:" + *v)) {
    plan.expert_tp = std::stoll(*v);
    stated.keys.push_back("expert_tp");
  }
}

// The run's plan: what it states, the format's defaults, then its framework's (the preset of its
// era), and the global batch: the framework's when it runs the local batch at once (dp x
// micro-batch), else the run is unsupported. Each default is noted, in the order of
// kDefaultedPlanKeys; so is precision's (the run's `precision` sets the plan's).
void read_run_plan(JsonObjectReader& r, const json& j, const FrameworkPreset& preset, PublishedRun& run, std::string& unsupported) {
  const json& pj = j["plan"];
  ParallelPlan& plan = run.plan = read_plan(r, ParallelPlan{}, nullptr);
  r.reject_unknown_keys();
  StatedKnobs stated;
  for (const auto& [key, value] : pj.items()) {
    if (!value.is_null()) stated.keys.push_back(key);
  }
  stated.compiled = has_option(j, "torch_compile") || has_option(j, "async_tp");  // async TP needs compile
  std::map<std::string, std::string> filled;
  apply_format_defaults(j, plan, stated, filled);
  bool per_op = false;
  for (const PresetSetting& s : apply_framework_preset(preset_of_era(preset, run.group, run.source), plan, stated)) {
    if (s.key == "micro_batch" || s.key == "zero_stage" || s.key == "sequence_parallel") filled[s.key] = s.value;
    per_op = per_op || s.key == "recompute";
  }
  if (!stated.has("micro_batch") && filled.count("micro_batch") == 0) filled["micro_batch"] = "1";
  if (!stated.has("global_batch")) {
    // The sizes as the defaults may compute with them (int_or): the reader has not bounded them.
    if (preset.local_batch_is_micro_batch && int_or(pj, "pp", 1) == 1) {
      plan.global_batch = int_or(pj, "dp", 1) * int_or(pj, "micro_batch", 1);
      filled["global_batch"] = std::to_string(plan.global_batch);
    } else {
      unsupported = "plan.global_batch is not stated and framework " + preset.name + " gives no default";
    }
  }
  for (const char* key : kDefaultedPlanKeys) {
    if (filled.count(key) > 0) run.defaults_used.push_back(std::string("plan.") + key + "=" + filled[key]);
  }
  if (is_null(j, "precision")) run.defaults_used.push_back("precision=bf16");
  // An option the run's plan leaves nothing to apply to is a note, not a refusal: TP
  // communication overlap without TP (or without SP) is what Megatron-Bridge's and NeMo's
  // comm-overlap configs switch off with a warning ("Disabling tensor parallel communication overlap
  // due to TP size < 2", megatron/bridge/training/comm_overlap.py).
  if (plan.tp_comm_overlap && (plan.tp < 2 || !plan.sequence_parallel)) {
    plan.tp_comm_overlap = false;
    run.defaults_used.push_back(std::string("plan.tp_comm_overlap=false (stated, not applied: ") +
                                (plan.tp < 2 ? "tp 1" : "no sequence parallelism") + ", as the framework disables it)");
  }
  if (per_op) run.defaults_used.push_back("plan.recompute=selective_op (" + preset.name + "'s selective checkpointing is per op)");
}

// What the format never states, listed as used: the kernels and overlaps of the run's framework and
// era, and an MoE run's expert TP, dispatcher and EP overlap (expert TP 1 with EP, the all-to-all
// dispatcher: the Megatron-Bridge recipes'; no EP overlap: Megatron-Core's default) unless its
// plan or options state them.
void note_plan_defaults(const json& j, PublishedRun& run) {
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  run.defaults_used.push_back(std::string("plan.attention=") + to_string(run.plan.attention));
  run.defaults_used.push_back("plan.dp_overlap=" + flag(run.plan.dp_overlap));
  run.defaults_used.push_back("plan.tp_overlap=" + flag(run.plan.tp_overlap));
  run.defaults_used.push_back("plan.tp_comm_overlap=" + flag(run.plan.tp_comm_overlap));
  run.defaults_used.push_back(std::string("plan.cross_entropy=") + to_string(run.plan.cross_entropy));
  run.defaults_used.push_back(std::string("plan.norm=") + to_string(run.plan.norm));
  if (!run.model.moe) return;
  const json* plan = j.contains("plan") && j["plan"].is_object() ? &j["plan"] : nullptr;
  if ((plan == nullptr || !plan->contains("expert_tp")) && !option_value(j, "expert_tensor_parallel")) {
    run.defaults_used.push_back("plan.expert_tp=" + std::to_string(run.plan.expert_tp_size()));
  }
  if ((plan == nullptr || !plan->contains("moe_dispatcher")) && !option_value(j, "moe_token_dispatcher")) {
    run.defaults_used.push_back(std::string("plan.moe_dispatcher=") + to_string(run.plan.moe_dispatcher));
  }
  if ((plan == nullptr || !plan->contains("ep_comm_overlap")) && !has_option(j, "overlap_moe_expert_parallel_comm")) {
    run.defaults_used.push_back("plan.ep_comm_overlap=" + flag(run.plan.ep_comm_overlap));
  }
}

// FP8 options: fp8_params (FP8 primary weights), torchao's row-wise float8 recipe (torchtitan's
// float8 rowwise) and Transformer Engine's per-tensor current scaling (fp8_current_scaling); on a
// run that is not FP8 a recipe names nothing the simulator can price, and stays listed as not
// modeled. An FP8 run that names no recipe and states no plan.fp8_recipe takes its framework's
// (Megatron-Bridge: current scaling), noted; one that states no fp8_params its framework's (NeMo 2
// and Megatron-Bridge keep FP8 primary weights), noted.
void apply_fp8_options(const json& j, const FrameworkPreset& preset, PublishedRun& run) {
  if (has_option(j, "fp8_params")) run.plan.fp8_params = true;
  const bool fp8 = run.plan.precision == Precision::kFp8;
  const bool stated = j.contains("plan") && j["plan"].is_object() && j["plan"].contains("fp8_recipe") && !j["plan"]["fp8_recipe"].is_null();
  bool recipe_named = false;
  for (const auto& [option, recipe] : {std::pair{"float8_rowwise", Fp8Recipe::kRowwise}, std::pair{"fp8_current_scaling", Fp8Recipe::kTensorwise}}) {
    if (!has_option(j, option)) continue;
    if (fp8) run.plan.fp8_recipe = recipe;
    else run.options_not_modeled.push_back(option);
    recipe_named = true;
    break;
  }
  if (fp8 && !stated && !recipe_named && preset.fp8_tensorwise) {
    run.plan.fp8_recipe = Fp8Recipe::kTensorwise;
    run.defaults_used.push_back("plan.fp8_recipe=tensorwise (" + preset.name + "'s FP8 recipes are per-tensor current scaling)");
  }
  const bool torchao_stated = j.contains("plan") && j["plan"].is_object() && j["plan"].contains("torchao_float8") && !j["plan"]["torchao_float8"].is_null();
  if (fp8 && preset.torchao_float8 && !torchao_stated) run.plan.torchao_float8 = true;  // torchtitan's Float8Linear
  const bool params_stated = j.contains("plan") && j["plan"].is_object() && j["plan"].contains("fp8_params") && !j["plan"]["fp8_params"].is_null();
  if (!run.plan.fp8_params && !params_stated && preset_fp8_params(preset, run.plan)) {
    run.plan.fp8_params = true;
    run.defaults_used.push_back("plan.fp8_params=true (" + preset.name + "'s FP8 recipes keep FP8 primary weights)");
  }
}

PublishedRun read_run(const json& raw, const std::string& path, const std::string& pointer, ProblemList& problems) {
  PublishedRun run;
  json j = raw;
  std::string unsupported;
  const std::string framework = j.is_object() && j.contains("framework") && j["framework"].is_string() ? j["framework"].get<std::string>() : "";
  const FrameworkPreset preset = framework_preset(framework);
  if (!preset.known && !framework.empty()) run.defaults_used.push_back("framework " + framework + ": generic preset");
  if (j.is_object()) {
    fill_source_defaults(j, run.defaults_used, unsupported);
  }
  JsonObjectReader r(j, path, pointer, problems);
  run.id = r.required_string("id");
  run.group = r.required_string("group");
  run.source = r.optional_string("source").value_or("");
  run.framework = r.optional_string("framework").value_or("");
  read_options(j, r, run);
  if (auto m = r.optional_object("model")) run.model = read_model(*m);
  else r.add_problem("model", "missing required object \"model\"");
  if (auto hw = r.optional_object("hardware")) {
    run.gpu = hw->required_string("gpu");
    run.gpus = hw->required_int("gpus", 1);
    run.gpus_per_node = hw->optional_int("gpus_per_node", 1).value_or(8);
    run.inter_node_gbps_per_gpu = hw->optional_number("inter_node_gbps_per_gpu", 0.0).value_or(200);
    hw->reject_unknown_keys();
  } else {
    r.add_problem("hardware", "missing required object \"hardware\"");
  }
  if (auto p = r.optional_object("plan")) read_run_plan(*p, j, preset, run, unsupported);
  else r.add_problem("plan", "missing required object \"plan\"");
  note_plan_defaults(j, run);
  // bf16 when not stated: the same tensor-core rate as fp16 on every catalog GPU, so the choice
  // does not move a prediction.
  // Blackwell's block-scaled formats, MXFP8 and NVFP4: Transformer Engine's recipes of those names.
  run.plan.precision = parse_precision(
      r.optional_choice("precision", {"bf16", "fp16", "fp32", "fp8", "mxfp8", "nvfp4"}).value_or("bf16"));
  apply_fp8_options(j, preset, run);
  if (auto m = r.optional_object("measured")) read_measured(*m, run);
  else r.add_problem("measured", "missing required object \"measured\"");
  r.reject_unknown_keys();
  run.unsupported = unsupported.empty() ? unsupported_reason(run, path + " " + pointer) : unsupported;
  return run;
}

}  // namespace

std::vector<PublishedRun> load_published_runs(const std::string& path) {
  const json doc = load_json_file(path);
  ProblemList problems;
  JsonObjectReader root(doc, path, "", problems);
  root.required_choice("schema", {"trainsim.published_runs"});
  const int64_t version = root.required_int("schema_version", 1);
  if (version > 2) root.add_problem("schema_version", "version " + std::to_string(version) + " is newer than this trainsim reads (1 or 2)");
  std::vector<PublishedRun> runs;
  if (doc.is_object() && doc.contains("runs") && doc["runs"].is_array()) {
    root.accept("runs");
    std::map<std::string, size_t> first_index;  // ids name the rows of every report, so each is unique
    for (size_t i = 0; i < doc["runs"].size(); ++i) {
      runs.push_back(read_run(doc["runs"][i], path, "/runs/" + std::to_string(i), problems));
      const auto [it, fresh] = first_index.emplace(runs.back().id, i);
      if (!fresh && !runs.back().id.empty()) {
        problems.add(path + ": /runs/" + std::to_string(i) + "/id: id \"" + runs.back().id + "\" repeats /runs/" +
                     std::to_string(it->second) + "/id (each run needs its own)");
      }
    }
  } else {
    root.add_problem("runs", "missing required array \"runs\"");
  }
  root.reject_unknown_keys();
  problems.throw_if_any("docs/validation.md describes the published-run format: its keys and their defaults");
  return runs;
}

}  // namespace trainsim
