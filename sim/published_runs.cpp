// Reading published-run files, with the defaults of docs/validation.md for what sources omit.
// Defaults are filled into a copy of each run's JSON before it is read, so the readers see one
// complete record and every default is named in `defaults_used`.
#include "sim/published_runs.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"
#include "sim/framework_preset.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

namespace {

using nlohmann::json;

// Sources whose software defaulted to Megatron's unfused core attention and reduced gradients
// after the backward: Megatron-LM 2021 (SC'21), Korthikanti et al. 2022, BLOOM's Megatron-DeepSpeed,
// and the Zero Bubble paper (arXiv 2401.10241), built on Megatron-LM of late 2023, whose
// arguments.py had --transformer-impl local by default and --use-flash-attn and
// --overlap-grad-reduce opt-in (sail-sg/zero-bubble-pipeline-parallelism@0e7a7425, 2023-11-14);
// the repository's own ZB script, which passes --use-flash-attn, came in August 2024.
bool predates_fused_attention(const std::string& group) {
  return group == "megatron_sc21_table1" || group == "korthikanti_2022_table5" || group == "bloom" ||
         group == "zero_bubble_pp_a100";
}

// NeMo Megatron 22.x, the NeMo launcher's 2022 runs: its GPT configs
// (NVIDIA/NeMo-Megatron-Launcher@3579cdb3 conf/training/gpt3/*.yaml) have no flash-attention,
// Transformer Engine or userbuffer key: Megatron's core attention, no TP communication overlap.
// Every run from before fused attention predates userbuffers too.
bool predates_userbuffers(const std::string& group) { return group == "nemo_launcher_a100" || predates_fused_attention(group); }

bool is_null(const json& object, const char* key) { return !object.contains(key) || object[key].is_null(); }

// A size the defaults may compute with: a positive integer within the largest size bound (so a
// product of two stays exact), else `fallback` (the reader reports a zero, negative, mistyped or
// out-of-bound size with its key; the defaults must not divide or multiply by it first).
int64_t int_or(const json& object, const char* key, int64_t fallback) {
  if (!object.contains(key) || !object[key].is_number_integer()) return fallback;
  const int64_t value = object[key].get<int64_t>();
  return value >= 1 && value <= limits::kMaxSeqLen ? value : fallback;
}

struct Filler {
  std::vector<std::string>& used;
  // Sets `object[key]` to `value` where the source left it out or null, and records it.
  void operator()(json& object, const char* section, const char* key, const json& value) {
    if (!object.is_object() || !is_null(object, key)) return;
    object[key] = value;
    used.push_back(std::string(section) + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
};

// Model fields GPT-3-like sources leave out (Zero Bubble's table): GELU, 4 x hidden, GPT-2's BPE.
void fill_model(json& model, Filler& fill, std::string& unsupported) {
  if (!model.is_object()) return;
  fill(model, "model.", "ffn_kind", "gelu");
  if (is_null(model, "ffn_hidden")) {
    const json* moe = model.contains("moe") && model["moe"].is_object() ? &model["moe"] : nullptr;
    if (moe != nullptr && moe->contains("expert_ffn_hidden") && (*moe)["expert_ffn_hidden"].is_number_integer()) {
      fill(model, "model.", "ffn_hidden", (*moe)["expert_ffn_hidden"]);  // every layer's FFN is experts
    } else if (model["ffn_kind"] == "gelu") {
      // 4 x hidden only where it fits in int64 (found by fuzz/); a larger hidden is refused by the model checks.
      const int64_t hidden = int_or(model, "hidden", 0);
      fill(model, "model.", "ffn_hidden", hidden <= std::numeric_limits<int64_t>::max() / 4 ? 4 * hidden : hidden);
    } else {
      unsupported = "model.ffn_hidden is not stated and the model is not a GELU one (no 4 x hidden default)";
      fill(model, "model.", "ffn_hidden", 1);
    }
  }
  fill(model, "model.", "vocab", 50257);
  // The format has no head_dim and no sliding window: a model the catalog knows by the same name,
  // with the same layers, hidden width and heads, takes the catalog's (its Hugging Face config's);
  // else hidden / heads and full attention.
  if (!model.contains("name") || !model["name"].is_string()) return;
  std::string name = model["name"].get<std::string>();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const ModelSpec& known : builtin_models()) {
    if (known.name != name || known.layers != int_or(model, "layers", 0) || known.hidden != int_or(model, "hidden", 0) ||
        known.heads != int_or(model, "heads", 0)) {
      continue;
    }
    if (!model.contains("head_dim") && known.head_dim * known.heads != known.hidden) fill(model, "model.", "head_dim", known.head_dim);
    if (known.sliding_window > 0 && !model.contains("sliding_window")) {
      fill(model, "model.", "sliding_window", known.sliding_window);
      fill(model, "model.", "sliding_window_layers", known.sliding_window_layers);
    }
  }
}

// GPU-dependent network: its reference server's NIC rate, a catalog capability (DGX A100 200 Gb/s, H100/H200 400).
void fill_hardware(json& hw, Filler& fill) {
  if (!hw.is_object()) return;
  const std::string gpu = hw.contains("gpu") && hw["gpu"].is_string() ? hw["gpu"].get<std::string>() : "";
  if (gpu_in_catalog(gpu)) fill(hw, "hardware.", "inter_node_gbps_per_gpu", find_gpu(gpu).capabilities.reference_node_nic_gbps_per_gpu);
}

bool has_option(const json& run, const char* option) {
  if (!run.contains("options") || !run["options"].is_array()) return false;
  for (const json& o : run["options"]) {
    if (o == option) return true;
  }
  return false;
}

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

// The first date a run's `source` names (YYYY-MM-DD, YYYY-MM or YYYYMM, not inside a commit hash)
// as YYYYMMDD (day 1 when not given), or 0 when it names none.
int64_t source_date(const json& run) {
  if (!run.contains("source") || !run["source"].is_string()) return 0;
  const std::string& t = run["source"].get_ref<const std::string&>();
  const auto alnum = [&](size_t i) { return i < t.size() && std::isalnum(static_cast<unsigned char>(t[i])) != 0; };
  const auto digits = [&](size_t i, size_t n) {
    for (size_t k = i; k < i + n; ++k) {
      if (k >= t.size() || std::isdigit(static_cast<unsigned char>(t[k])) == 0) return false;
    }
    return true;
  };
  const auto number = [&](size_t i, size_t n) { return std::stoll(t.substr(i, n)); };
  for (size_t i = 0; i + 6 <= t.size(); ++i) {
    if ((i > 0 && alnum(i - 1)) || t[i] != '2' || t[i + 1] != '0' || !digits(i, 4)) continue;
    const size_t month_at = i + 4 + (t[i + 4] == '-' ? 1 : 0);
    if (!digits(month_at, 2) || number(month_at, 2) < 1 || number(month_at, 2) > 12) continue;
    size_t end = month_at + 2;
    int64_t day = 1;
    if (end + 2 < t.size() && t[end] == '-' && digits(end + 1, 2) && !alnum(end + 3)) {
      day = number(end + 1, 2);
      end += 3;
    }
    if (alnum(end)) continue;
    return number(i, 4) * 10000 + number(month_at, 2) * 100 + day;
  }
  return 0;
}

// torchtitan split the local batch into as many pipeline micro-batches as pipeline ranks
// (JobConfig experimental.pipeline_parallel_microbatches: "the default value will be the number
// of pipeline stages"; torchtitan@9dec370 parallelisms/pipelining_utils.py) until PR #1073
// (2025-04-07, 5e2033c) made a micro-batch of one sequence the default. A torchtitan run with a
// pipeline that does not state its micro-batch takes the default of the date its source names.
constexpr int64_t kTorchtitanMicrobatchSizeSince = 20250407;

// torchtitan compiles the loss with the model (training.compile, later compile.components "loss")
// since PR #1033 (bbb1b616e, 2025-04-02, torchtitan/components/loss.py build_cross_entropy_loss);
// before it train.py left the loss uncompiled ("compiling loss function causes CUDA errors").
constexpr int64_t kTorchtitanCompiledLossSince = 20250402;

void fill_micro_batch(json& plan, int64_t source_day, const FrameworkPreset& preset, Filler& fill) {
  const int64_t dp = int_or(plan, "dp", 1), pp = int_or(plan, "pp", 1);
  if (preset.local_batch_is_micro_batch && pp == 1 && !is_null(plan, "global_batch")) {
    fill(plan, "plan.", "micro_batch", std::max<int64_t>(1, int_or(plan, "global_batch", 1) / dp));
  }
  const bool microbatches_are_pp = preset.name == "torchtitan" && pp > 1 && source_day > 0 &&
                                   source_day < kTorchtitanMicrobatchSizeSince && !is_null(plan, "global_batch");
  if (microbatches_are_pp && int_or(plan, "global_batch", 1) % (dp * pp) == 0) {
    fill(plan, "plan.", "micro_batch", int_or(plan, "global_batch", 1) / (dp * pp));
  }
  fill(plan, "plan.", "micro_batch", 1);
}

void fill_plan(json& run, const FrameworkPreset& preset, Filler& fill, std::string& unsupported) {
  json& plan = run["plan"];
  if (!plan.is_object()) return;
  if (plan.contains("schedule") && plan["schedule"] == "zb-v") fill(plan, "plan.", "vpp", 2);  // ZB-V: two chunks per rank
  const bool interleaved = plan.contains("schedule") && plan["schedule"] == "interleaved";
  const int64_t dp = int_or(plan, "dp", 1), pp = int_or(plan, "pp", 1), tp = int_or(plan, "tp", 1);
  if (interleaved) fill(plan, "plan.", "vpp", least_interleaving(int_or(run["model"], "layers", 0), pp));
  fill_micro_batch(plan, source_date(run), preset, fill);
  if (is_null(plan, "global_batch")) {
    if (preset.local_batch_is_micro_batch && pp == 1) fill(plan, "plan.", "global_batch", dp * int_or(plan, "micro_batch", 1));
    else unsupported = "plan.global_batch is not stated and framework " + preset.name + " gives no default";
  }
  const bool distributed_optimizer = has_option(run, "distributed_optimizer") || has_option(run, "zero1");
  fill(plan, "plan.", "zero_stage", distributed_optimizer ? 1 : preset.zero_stage);
  fill(plan, "plan.", "recompute", has_option(run, "selective_recompute_per_op") ? "selective" : "none");
  fill(plan, "plan.", "sequence_parallel", preset.sequence_parallel_with_tp && tp > 1);
}

std::string unsupported_reason(const PublishedRun& run, const std::string& where) {
  if (!gpu_in_catalog(run.gpu)) return "GPU " + run.gpu + " is not in the catalog (`trainsim catalog` lists the GPUs)";
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

// What a run's plan leaves to its framework and era: the kernels, overlaps and loss of its time.
ParallelPlan plan_defaults(const std::string& group, const FrameworkPreset& preset, const json& j) {
  ParallelPlan defaults;
  const bool old = predates_fused_attention(group);
  defaults.attention = predates_userbuffers(group) || !preset.fused_attention ? AttentionKernel::kUnfused : AttentionKernel::kFlash;
  defaults.dp_overlap = !old && preset.dp_overlap;
  // Megatron-LM's asynchronous TP all-reduce arrived after the SC'21 runs and BLOOM's fork.
  defaults.tp_overlap = group != "megatron_sc21_table1" && group != "bloom";
  const bool compiled = has_option(j, "torch_compile") || has_option(j, "async_tp");  // async TP needs compile
  defaults.cross_entropy = preset.pytorch_cross_entropy ? LossKernel::kPytorch : LossKernel::kFused;
  if (preset.pytorch_cross_entropy && compiled && source_date(j) >= kTorchtitanCompiledLossSince) defaults.cross_entropy = LossKernel::kCompiled;
  defaults.norm = preset.eager_unless_compiled && !compiled ? NormKernel::kEager : NormKernel::kFused;
  return defaults;
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
  if (plan == nullptr || !plan->contains("expert_tp")) run.defaults_used.push_back("plan.expert_tp=" + std::to_string(run.plan.expert_tp_size()));
  if (plan == nullptr || !plan->contains("moe_dispatcher")) run.defaults_used.push_back(std::string("plan.moe_dispatcher=") + to_string(run.plan.moe_dispatcher));
  if ((plan == nullptr || !plan->contains("ep_comm_overlap")) && !has_option(j, "overlap_moe_expert_parallel_comm")) {
    run.defaults_used.push_back("plan.ep_comm_overlap=" + flag(run.plan.ep_comm_overlap));
  }
}

// FP8 options: fp8_params (FP8 primary weights) and torchao's row-wise float8 recipe
// (torchtitan's float8 rowwise); on a run that is not FP8 the recipe names nothing the simulator
// can price, and stays listed as not modeled.
void apply_fp8_options(const json& j, PublishedRun& run) {
  run.plan.fp8_params = has_option(j, "fp8_params");
  if (!has_option(j, "float8_rowwise")) return;
  if (run.plan.precision == Precision::kFp8) run.plan.fp8_recipe = Fp8Recipe::kRowwise;
  else run.options_not_modeled.push_back("float8_rowwise");
}

PublishedRun read_run(const json& raw, const std::string& path, const std::string& pointer, ProblemList& problems) {
  PublishedRun run;
  json j = raw;
  Filler fill{run.defaults_used};
  std::string unsupported;
  const std::string framework = j.is_object() && j.contains("framework") && j["framework"].is_string() ? j["framework"].get<std::string>() : "";
  const FrameworkPreset preset = framework_preset(framework);
  if (!preset.known && !framework.empty()) run.defaults_used.push_back("framework " + framework + ": generic preset");
  if (j.is_object()) {
    if (j.contains("model")) fill_model(j["model"], fill, unsupported);
    if (j.contains("hardware")) fill_hardware(j["hardware"], fill);
    if (j.contains("plan")) fill_plan(j, preset, fill, unsupported);
    // Same tensor-core rate as fp16 on every catalog GPU, so the choice does not move a prediction.
    fill(j, "", "precision", "bf16");
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
  const ParallelPlan defaults = plan_defaults(run.group, preset, j);
  const bool no_userbuffers = predates_userbuffers(run.group);
  if (auto p = r.optional_object("plan")) {
    run.plan = read_plan(*p, defaults, nullptr);
    p->reject_unknown_keys();
    const bool framework_overlaps = preset.tp_comm_overlap_with_sp && !no_userbuffers && run.plan.tp > 1 && run.plan.sequence_parallel;
    run.plan.tp_comm_overlap = has_option(j, "tp_comm_overlap") || has_option(j, "async_tp") || framework_overlaps;
    if (has_option(j, "overlap_moe_expert_parallel_comm")) run.plan.ep_comm_overlap = true;
    if (preset.per_op_checkpointing && run.plan.recompute == Recompute::kSelective) {
      run.plan.recompute = Recompute::kSelectiveOp;
      run.defaults_used.push_back("plan.recompute=selective_op (" + preset.name + "'s selective checkpointing is per op)");
    }
  } else {
    r.add_problem("plan", "missing required object \"plan\"");
  }
  note_plan_defaults(j, run);
  if (auto precision = r.optional_choice("precision", {"bf16", "fp16", "fp32", "fp8"})) run.plan.precision = parse_precision(*precision);
  apply_fp8_options(j, run);
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
  problems.throw_if_any("shared/validation/README.md and INTERFACE.md describe the published-run format");
  return runs;
}

}  // namespace trainsim
