// Reading a torchtitan job TOML back into a plan (the inverse of interop/torchtitan_export.cpp).
// A key the file leaves out takes torchtitan's JobConfig default (job_config.py at 238fa99): local
// batch 8, seq_len 2048, data_parallel_shard_degree -1 (the ranks left over), activation
// checkpointing "selective" every 2nd layer, compile off. Sections about data, optimizer,
// checkpoints and logging are accepted quietly; any other key trainsim does not model is listed.
#include <algorithm>
#include <optional>
#include <set>

#include <toml++/toml.h>

#include "common/errors.hpp"
#include "common/limits.hpp"
#include "interop/plan_import.hpp"
#include "interop/torchtitan_export.hpp"
#include "plan/framework_preset.hpp"

namespace trainsim {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

// torchtitan's own definition of every key, named in the hint of each type or range error.
const char* const kTomlHint = "torchtitan's JobConfig (torchtitan/config/job_config.py) defines each key, its type and its default";

// Typed access to "section.key" paths; remembers what was read so the rest can be listed.
class TomlReader {
 public:
  TomlReader(const toml::table& root, const std::string& file) : root_(root), file_(file) {}

  std::optional<int64_t> integer(const std::string& path, int64_t min_value) {
    const toml::node* n = find(path);
    if (n == nullptr) return std::nullopt;
    const auto v = n->value<int64_t>();
    if (!n->is_integer() || !v) throw InputError(file_ + ": " + path + ": expected an integer, got " + describe(*n), kTomlHint);
    if (*v < min_value) throw InputError(file_ + ": " + path + ": " + s(*v) + " must be >= " + s(min_value), kTomlHint);
    // Parallel degrees up to a job's GPUs, batches, layers and lengths up to a sequence's tokens
    // (common/limits.hpp): products of them then stay inside int64.
    const int64_t max_value = path.find("_degree") != std::string::npos ? limits::kMaxGpus : limits::kMaxSeqLen;
    if (*v > max_value) {
      throw InputError(file_ + ": " + path + ": " + s(*v) + " must be <= " + s(max_value),
                       "the bound is far beyond any real job (docs/hardening.md); a typo?");
    }
    return *v;
  }
  std::optional<bool> boolean(const std::string& path) {
    const toml::node* n = find(path);
    if (n == nullptr) return std::nullopt;
    if (!n->is_boolean()) throw InputError(file_ + ": " + path + ": expected true or false, got " + describe(*n), kTomlHint);
    return n->value<bool>();
  }
  std::optional<std::string> string(const std::string& path) {
    const toml::node* n = find(path);
    if (n == nullptr) return std::nullopt;
    if (!n->is_string()) throw InputError(file_ + ": " + path + ": expected a string, got " + describe(*n), kTomlHint);
    return n->value<std::string>();
  }
  std::vector<std::string> strings(const std::string& path) {
    std::vector<std::string> out;
    const toml::node* n = find(path);
    if (n == nullptr) return out;
    const toml::array* a = n->as_array();
    if (a == nullptr) throw InputError(file_ + ": " + path + ": expected a list of strings, got " + describe(*n), kTomlHint);
    for (const toml::node& e : *a) {
      if (!e.is_string()) throw InputError(file_ + ": " + path + ": expected a list of strings, got " + describe(e) + " in it", kTomlHint);
      out.push_back(*e.value<std::string>());
    }
    return out;
  }
  bool has(const std::string& path) const { return root_.at_path(path).node() != nullptr; }
  [[noreturn]] void refuse(const std::string& path, const std::string& what, const std::string& hint) const {
    throw InputError(file_ + ": " + path + ": " + what, hint);
  }

  // Keys neither read nor in a quiet section or list; false and empty values select nothing.
  std::vector<std::string> unread(const std::set<std::string>& quiet) const {
    std::vector<std::string> out;
    walk(root_, "", quiet, out);
    return out;
  }

 private:
  const toml::node* find(const std::string& path) {
    read_.insert(path);
    return root_.at_path(path).node();
  }
  static std::string describe(const toml::node& n) {
    if (n.is_string()) return "a string (\"" + *n.value<std::string>() + "\")";
    if (n.is_integer()) return std::to_string(*n.value<int64_t>());
    if (n.is_floating_point()) return "a number (" + std::to_string(*n.value<double>()) + ")";
    if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
    if (n.is_array()) return "a list";
    return n.is_table() ? "a table" : "a date or time";
  }
  void walk(const toml::table& t, const std::string& prefix, const std::set<std::string>& quiet, std::vector<std::string>& out) const {
    for (const auto& [key, node] : t) {
      const std::string path = prefix + std::string(key.str());
      if (read_.count(path) > 0 || quiet.count(path) > 0) continue;
      if (const toml::table* sub = node.as_table()) {
        walk(*sub, path + ".", quiet, out);
      } else if (!(node.is_boolean() && !*node.value<bool>()) && !(node.is_array() && node.as_array()->empty())) {
        out.push_back(path);
      }
    }
  }
  const toml::table& root_;
  const std::string& file_;
  std::set<std::string> read_;
};

const std::set<std::string> kQuiet = {
    "job", "profiling", "metrics", "optimizer", "lr_scheduler", "checkpoint", "validation", "comm", "debug",
    "memory_estimation", "model.hf_assets_path", "model.tokenizer_path", "model.print_after_conversion",
    "training.dataset", "training.dataset_path", "training.max_norm", "training.steps", "training.gc_freq",
    "training.gc_debug", "training.dataloader", "training.mixed_precision_reduce", "activation_checkpoint.preserve_rng_state",
    "activation_checkpoint.determinism_check", "activation_checkpoint.debug", "activation_checkpoint.early_stop",
    "activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns", "quantize.linear.float8.filter_fqns",
    "float8.filter_fqns"};

// Data-parallel degrees -> dp and the ZeRO stage (FSDP2 = 3, DDP = 0); the world size.
void read_mesh(TomlReader& r, const std::string& file, int64_t gpus, ImportedJob& job) {
  ParallelPlan& p = job.plan;
  p.tp = r.integer("parallelism.tensor_parallel_degree", 1).value_or(1);
  p.pp = r.integer("parallelism.pipeline_parallel_degree", 1).value_or(1);
  p.cp = r.integer("parallelism.context_parallel_degree", 1).value_or(1);
  p.ep = r.integer("parallelism.expert_parallel_degree", 1).value_or(1);
  const int64_t replicate = r.integer("parallelism.data_parallel_replicate_degree", 1).value_or(1);
  int64_t shard = r.integer("parallelism.data_parallel_shard_degree", -1).value_or(-1);
  if (shard == 0) r.refuse("parallelism.data_parallel_shard_degree", "0 is not a degree", "write -1 (the ranks left over) or a degree >= 1");
  if (static_cast<double>(replicate) * p.tp * p.pp * p.cp > static_cast<double>(int64_t{1} << 20)) {  // before the int64 product
    r.refuse("parallelism", "data_parallel_replicate_degree x tensor x pipeline x context degrees (" + s(replicate) + " x " + s(p.tp) +
                 " x " + s(p.pp) + " x " + s(p.cp) + ") must be <= 1048576 ranks", "give the degrees the job runs");
  }
  const int64_t others = replicate * p.tp * p.pp * p.cp;
  if (shard == -1) {
    if (gpus <= 0) r.refuse("parallelism.data_parallel_shard_degree", "-1 (the ranks left over) needs the GPU count", "give --gpus N");
    if (gpus % others != 0) r.refuse("parallelism.data_parallel_shard_degree", "-1: " + s(gpus) + " GPUs is not a multiple of replicate x tp x pp x cp (" + s(others) + ")", "check --gpus");
    shard = gpus / others;
  } else {
    job.gpus = shard * others;
    if (gpus > 0 && gpus != job.gpus) {
      throw InputError(file + ": the degrees multiply to " + s(job.gpus) + " GPUs, not --gpus " + s(gpus), "torchtitan refuses a world size other than the product too; check --gpus");
    }
  }
  if (replicate > 1 && shard == 1 && p.tp * p.pp * p.cp > 1) {
    r.refuse("parallelism.data_parallel_replicate_degree", s(replicate) + " (DDP) with tp x pp x cp " + s(p.tp * p.pp * p.cp) + ": torchtitan's DDP runs only alone", "shard instead (data_parallel_shard_degree)");
  }
  p.dp = replicate * shard;
  p.zero_stage = shard > 1 || p.cp > 1 ? 3 : 0;  // FSDP is applied over the CP ranks too (ParallelDims.fsdp_enabled)
  if (p.zero_stage == 3 && replicate > 1) p.dp_shard = shard * p.cp;  // HSDP: shard inside, replicate across
  p.tp_comm_overlap = p.tp > 1 && r.boolean("parallelism.enable_async_tensor_parallel").value_or(false);
  const std::string reshard = r.string("parallelism.fsdp_reshard_after_forward").value_or("default");
  // trainsim's FSDP keeps the gathered weights exactly when it pipelines (torchtitan's "default").
  const bool keeps = reshard == "never" || (reshard == "default" && p.pp > 1);
  if (p.zero_stage == 3 && keeps != (p.pp > 1)) {
    job.not_modeled.push_back("parallelism.fsdp_reshard_after_forward=" + reshard + " (modeled as " + (p.pp > 1 ? "never" : "always") + " with pp " + s(p.pp) + ")");
  }
  const std::string rotate = r.string("parallelism.context_parallel_rotate_method").value_or("allgather");
  if (p.cp > 1) job.notes.push_back("context parallelism exchanges K/V by " + rotate + " (context_parallel_rotate_method); trainsim models a ring");
}

Schedule read_schedule(TomlReader& r) {
  const std::string name = r.string("parallelism.pipeline_parallel_schedule").value_or("1F1B");
  if (name == "1F1B") return Schedule::k1F1B;
  if (name == "GPipe") return Schedule::kGpipe;
  if (name == "Interleaved1F1B") return Schedule::kInterleaved;
  if (name == "ZBVZeroBubble") return Schedule::kZeroBubbleV;
  r.refuse("parallelism.pipeline_parallel_schedule", "\"" + name + "\" is not modeled",
           "trainsim models \"1F1B\", \"Interleaved1F1B\", \"ZBVZeroBubble\" and \"GPipe\"");
}

// The virtual stages and how torchtitan places the layers on them, as trainsim's plan keys.
void read_pipeline(TomlReader& r, const ModelSpec& m, ParallelPlan& p) {
  if (r.has("parallelism.module_fqns_per_model_part")) {
    r.refuse("parallelism.module_fqns_per_model_part", "explicit module lists are not read", "use pipeline_parallel_first/last_stage_less_layers");
  }
  if (!r.string("parallelism.pipeline_parallel_schedule_csv").value_or("").empty()) {
    r.refuse("parallelism.pipeline_parallel_schedule_csv", "a custom schedule is not modeled", "use pipeline_parallel_schedule");
  }
  const Schedule schedule = read_schedule(r);
  const int64_t first_less = r.integer("parallelism.pipeline_parallel_first_stage_less_layers", 0).value_or(1);
  const int64_t last_less = r.integer("parallelism.pipeline_parallel_last_stage_less_layers", 0).value_or(1);
  const auto per_stage = r.integer("parallelism.pipeline_parallel_layers_per_stage", 1);
  if (p.pp == 1) return;
  p.schedule = schedule;
  // torchtitan's stages per rank without layers_per_stage: 2 for its multi-stage schedules.
  const int64_t looped = schedule == Schedule::kInterleaved || schedule == Schedule::kZeroBubbleV ? 2 : 1;
  const int64_t stages = per_stage ? (m.layers + first_less + last_less + *per_stage - 1) / *per_stage : p.pp * looped;
  if (stages % p.pp != 0 || (looped == 1 && stages != p.pp) || (looped == 2 && stages < 2 * p.pp) ||
      (schedule == Schedule::kZeroBubbleV && stages != 2 * p.pp)) {
    r.refuse("parallelism.pipeline_parallel_layers_per_stage", s(per_stage.value_or(0)) + " gives " + s(stages) + " virtual stages for pp " + s(p.pp) + " and schedule " + to_string(schedule),
             "torchtitan refuses this too: one stage per rank for 1F1B/GPipe, a multiple of pp (at least 2 each) for Interleaved1F1B, exactly 2 per rank for ZBVZeroBubble");
  }
  p.vpp = stages / p.pp;
  const std::vector<int64_t> want = torchtitan_stage_layers(m.layers, stages, first_less, last_less);
  if (want.empty()) {
    r.refuse("parallelism.pipeline_parallel_first_stage_less_layers", s(first_less) + " / last " + s(last_less) + " leave a stage of " + s(stages) + " without layers for " + s(m.layers) + " layers of model \"" + m.name + "\"",
             "torchtitan refuses this split too; check --model");
  }
  for (const auto& [first, last] : {std::pair<int64_t, int64_t>{0, 0}, {want.front(), 0}, {0, want.back()}, {want.front(), want.back()}}) {
    ParallelPlan candidate = p;
    candidate.first_stage_layers = first;
    candidate.last_stage_layers = last;
    if (virtual_stage_layers(m, candidate) == want) {
      p = candidate;
      return;
    }
  }
  r.refuse("parallelism.pipeline_parallel_first_stage_less_layers", s(first_less) + " / last " + s(last_less) + ": a layer split trainsim cannot model",
           "use weights that leave the middle stages even");
}

void read_batch(TomlReader& r, ParallelPlan& p) {
  const int64_t local = r.integer("training.local_batch_size", 1).value_or(8);
  const int64_t global = r.integer("training.global_batch_size", -1).value_or(-1);
  p.global_batch = global > 0 ? global : local * p.dp;
  if (p.global_batch % (local * p.dp) != 0) {
    r.refuse("training.global_batch_size", s(global) + " is not a multiple of local_batch_size x dp (" + s(local * p.dp) + ")", "torchtitan refuses this too");
  }
  const int64_t pipeline_micro_batch = r.integer("parallelism.pipeline_parallel_microbatch_size", 1).value_or(1);
  p.micro_batch = local;
  if (p.pp == 1) return;
  p.micro_batch = pipeline_micro_batch;
  if (local % p.micro_batch != 0) {
    r.refuse("parallelism.pipeline_parallel_microbatch_size", s(p.micro_batch) + " does not divide local_batch_size (" + s(local) + ")", "torchtitan refuses this too");
  }
  if (p.global_batch != local * p.dp) {
    r.refuse("training.global_batch_size", s(global) + " with a pipeline runs " + s(p.global_batch / (local * p.dp)) + " pipeline flushes a step; trainsim models one",
             "set local_batch_size to global_batch_size / dp (" + s(p.global_batch / p.dp) + ")");
  }
}

// Layer-wise selective checkpointing (selective_ac_option "N", torchtitan's default "2" until
// pytorch/torchtitan#2357 removed it in March 2026): every N-th block checkpointed whole; "0": all.
void read_layer_checkpointing(TomlReader& r, const std::string& option, ParallelPlan& p) {
  const bool digits = !option.empty() && option.size() <= 5 && std::all_of(option.begin(), option.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    r.refuse("activation_checkpoint.selective_ac_option", "\"" + option + "\" is neither \"op\" nor a layer frequency",
             "write \"op\" (per-op checkpointing) or a whole number N (every N-th block checkpointed)");
  }
  const int64_t n = std::stoll(option);
  p.recompute = Recompute::kFull;
  p.recompute_method = n <= 1 ? RecomputeMethod::kUniform : RecomputeMethod::kEvery;
  p.recompute_layers = n <= 1 ? 1 : n;
}

// Recomputation, precision, and what compile.* says of the norm and the loss (when compile is on:
// else they are torchtitan's preset's, uncompiled).
void read_kernels(TomlReader& r, const ModelSpec& m, ImportedJob& job, StatedKnobs& stated) {
  ParallelPlan& p = job.plan;
  const std::string mode = r.string("activation_checkpoint.mode").value_or("selective");
  const std::string option = r.string("activation_checkpoint.selective_ac_option").value_or("2");
  if (mode == "none") p.recompute = Recompute::kNone;
  else if (mode == "full") p.recompute = Recompute::kFull;
  else if (mode == "selective" && option == "op") p.recompute = Recompute::kSelectiveOp;
  else if (mode == "selective") read_layer_checkpointing(r, option, p);
  else r.refuse("activation_checkpoint.mode", "\"" + mode + "\" is not modeled", "use \"none\", \"full\", or \"selective\" with selective_ac_option \"op\"");
  const std::vector<std::string> components = r.strings("compile.components");
  const auto compiles = [&](const char* component) {
    return !r.has("compile.components") || std::find(components.begin(), components.end(), component) != components.end();
  };
  if (r.boolean("compile.enable").value_or(false)) {
    // The model's RMSNorm fused; torchtitan/components/loss.py: cross_entropy on fp32 logits,
    // compiled with the "loss" component.
    p.norm = compiles("model") ? NormKernel::kFused : NormKernel::kEager;
    p.cross_entropy = compiles("loss") ? LossKernel::kCompiled : LossKernel::kPytorch;
    stated.keys.insert(stated.keys.end(), {"norm", "cross_entropy"});
  }
  const std::string backend = r.string("compile.backend").value_or("inductor");
  if (backend != "inductor") job.not_modeled.push_back("compile.backend=" + backend);
  const std::string param = r.string("training.mixed_precision_param").value_or("bfloat16");
  if (param != "bfloat16" && param != "float32") r.refuse("training.mixed_precision_param", "\"" + param + "\" is not bfloat16 or float32", "torchtitan takes those two");
  p.precision = param == "float32" ? Precision::kFp32 : Precision::kBf16;
  for (const std::string& c : r.strings("model.converters")) {
    if (c == "float8" || c == "quantize.linear.float8") p.precision = Precision::kFp8;
    else job.not_modeled.push_back("model.converters=" + c);
  }
  if (r.string("training.dtype").value_or("float32") != "float32") job.not_modeled.push_back("training.dtype (parameters kept in bfloat16)");
  const std::string flavor = r.string("model.flavor").value_or("");
  const std::string ours = torchtitan_llama3_flavor(m);
  if (r.string("model.name").value_or("llama3") == "llama3" && (flavor == "8B" || flavor == "70B" || flavor == "405B") && flavor != ours) {
    r.refuse("model.flavor", "\"" + flavor + "\" is not model \"" + m.name + "\"" + (ours.empty() ? "" : " (torchtitan's " + ours + ")"),
             "give the --model the file trains, e.g. --model llama3-" + std::string(flavor == "8B" ? "8b" : flavor == "70B" ? "70b" : "405b"));
  }
  const std::string recipe = r.string("quantize.linear.float8.recipe_name").value_or("tensorwise");
  if (recipe == "rowwise" && p.precision == Precision::kFp8) p.fp8_recipe = Fp8Recipe::kRowwise;
  else if (recipe != "tensorwise") job.not_modeled.push_back("quantize.linear.float8.recipe_name=" + recipe);
}

toml::table parse_toml(const std::string& text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw InputError(file + ": malformed TOML at line " + s(e.source().begin.line) + ", column " + s(e.source().begin.column) +
                         ": " + std::string(e.description()),
                     "check the file with a TOML validator (e.g. `python3 -c 'import tomllib,sys; tomllib.load(open(sys.argv[1],\"rb\"))' FILE`)");
  }
}

}  // namespace

ImportedJob import_torchtitan(const std::string& text, const std::string& file, const ModelSpec& model, int64_t gpus) {
  const toml::table root = parse_toml(text, file);
  TomlReader r(root, file);
  ImportedJob job;
  job.framework = "torchtitan";
  job.defaulted.push_back("dp");  // dp follows the world size when flags change tp, pp or cp
  read_mesh(r, file, gpus, job);
  read_pipeline(r, model, job.plan);
  read_batch(r, job.plan);
  StatedKnobs stated{{"zero_stage", "tp_comm_overlap", "micro_batch", "global_batch"}};  // the mesh, async TP, the batches
  read_kernels(r, model, job, stated);
  job.seq_len = r.integer("training.seq_len", 1).value_or(0);
  if (job.seq_len == 0) {
    job.seq_len = 2048;
    job.notes.push_back("training.seq_len not set: torchtitan's default 2048");
  }
  for (const std::string& path : r.unread(kQuiet)) job.not_modeled.push_back(path);
  // torchtitan's preset for the rest: SequenceParallel norms with TP (Llama 3's TP plan), and the
  // eager norm and PyTorch's loss of an uncompiled run.
  apply_framework_preset(framework_preset(job.framework), job.plan, stated);
  return job;
}

ParallelPlan parse_torchtitan_toml(const std::string& toml_text, const ModelSpec& model, int64_t gpus) {
  return import_torchtitan(toml_text, "torchtitan config", model, gpus).plan;
}

}  // namespace trainsim
