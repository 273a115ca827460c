// The import formats, and the DeepSpeed config importer (data parallelism only: tp = pp = 1, as
// DeepSpeed's config says nothing of them; Megatron-DeepSpeed takes them as Megatron arguments).
// Keys follow DeepSpeed's config reference (deepspeed.ai/docs/config-json); "auto" (filled in by
// the Hugging Face Trainer) counts as not stated, and what the config does not state takes
// DeepSpeed's preset (plan/framework_preset.hpp). Host offload is refused until modeled.
#include "interop/plan_import.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "plan/framework_preset.hpp"

namespace trainsim {

ImportFormat parse_import_format(const std::string& name) {
  if (name == "megatron") return ImportFormat::kMegatron;
  if (name == "deepspeed") return ImportFormat::kDeepSpeed;
  if (name == "torchtitan") return ImportFormat::kTorchtitan;
  if (name == "nemo") return ImportFormat::kNemo;
  throw InputError("--from: \"" + name + "\" is not one of: megatron, deepspeed, torchtitan, nemo",
                   "--from FORMAT FILE, e.g. --from megatron train.sh");
}

const char* to_string(ImportFormat format) {
  switch (format) {
    case ImportFormat::kMegatron: return "megatron";
    case ImportFormat::kDeepSpeed: return "deepspeed";
    case ImportFormat::kTorchtitan: return "torchtitan";
    case ImportFormat::kNemo: return "nemo";
  }
  return "?";
}

ImportedJob import_job(ImportFormat format, const std::string& text, const std::string& file, const ModelSpec& model,
                       int64_t gpus) {
  ImportedJob job;
  switch (format) {
    case ImportFormat::kMegatron: job = import_megatron(text, file, model, gpus); break;
    case ImportFormat::kDeepSpeed: job = import_deepspeed(text, file, gpus); break;
    case ImportFormat::kTorchtitan: job = import_torchtitan(text, file, model, gpus); break;
    case ImportFormat::kNemo: job = import_nemo(text, file, model, gpus); break;
  }
  job.file = file;
  return job;
}

namespace {

// Where DeepSpeed defines its keys, the hint of each type or range error.
const char* const kDeepSpeedHint = "DeepSpeed's config reference (deepspeed.ai/docs/config-json) defines each key and its values";

using Json = nlohmann::json;

// Keys of one config object: those read, those without effect on speed or memory (listed as such),
// the rest listed as not modeled.
void list_unread(const Json& object, const std::string& prefix, const std::set<std::string>& read,
                 const std::set<std::string>& no_effect, ImportedJob& job) {
  for (const auto& [key, value] : object.items()) {
    if (read.count(key) > 0 || value.is_null() || value == false) continue;
    (no_effect.count(key) > 0 ? job.no_effect : job.not_modeled).push_back(prefix + key);
  }
}

struct DeepSpeedReader {
  const std::string& file;
  ImportedJob& job;

  // An integer in [1, 2^20] at `object[key]`; nullopt when absent or "auto". The bound (a batch of a
  // million sequences) keeps read_batch's products inside int64 (found by fuzz/).
  std::optional<int64_t> count(const Json& object, const std::string& path, const char* key) const {
    if (!object.contains(key) || object[key].is_null()) return std::nullopt;
    const Json& v = object[key];
    if (v == "auto") {
      job.notes.push_back(path + key + " is \"auto\" (set by the launcher): not stated");
      return std::nullopt;
    }
    constexpr int64_t kMaxCount = int64_t{1} << 20;
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxCount) {
      throw InputError(file + ": /" + path + key + ": expected an integer from 1 to " + std::to_string(kMaxCount) + ", got " +
                           v.dump(),
                       "write a whole number");
    }
    return v.get<int64_t>();
  }
  bool enabled(const Json& root, const char* section) const {
    if (!root.contains(section) || !root[section].is_object() || !root[section].contains("enabled")) return false;
    const Json& v = root[section]["enabled"];
    if (v == "auto") {
      job.notes.push_back(std::string(section) + ".enabled is \"auto\" (set by the launcher): taken as off");
      return false;
    }
    if (!v.is_boolean()) throw InputError(file + ": /" + section + "/enabled: expected true or false, got " + v.dump(), kDeepSpeedHint);
    return v.get<bool>();
  }
};

// train_batch_size = micro-batch x gradient accumulation x dp (DeepSpeed checks the same).
void read_batch(const Json& j, const DeepSpeedReader& r, int64_t gpus, ImportedJob& job) {
  const auto total = r.count(j, "", "train_batch_size");
  const auto micro = r.count(j, "", "train_micro_batch_size_per_gpu");
  const auto steps = r.count(j, "", "gradient_accumulation_steps");
  int64_t dp = gpus;
  if (dp <= 0 && total && micro && steps) {
    if (*total % (*micro * *steps) != 0) {
      throw InputError(r.file + ": train_batch_size (" + std::to_string(*total) + ") is not a multiple of train_micro_batch_size_per_gpu x gradient_accumulation_steps (" +
                       std::to_string(*micro * *steps) + ")");
    }
    dp = *total / (*micro * *steps);
    job.gpus = dp;
  }
  if (dp <= 0) {
    throw InputError(r.file + ": the GPU count is not in the config (it needs train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps to derive it)",
                     "give --gpus N");
  }
  ParallelPlan& p = job.plan;
  p.dp = dp;
  const int64_t per_rank = total ? *total / dp : micro.value_or(1) * steps.value_or(1);
  p.micro_batch = micro ? *micro : per_rank / steps.value_or(1);
  p.global_batch = total ? *total : p.micro_batch * steps.value_or(1) * dp;
  if (!total && !steps) job.defaulted.push_back("global_batch");
  const bool consistent = p.micro_batch >= 1 && p.global_batch % (dp * p.micro_batch) == 0 &&
                          (!steps || p.global_batch == p.micro_batch * *steps * dp);
  if (!consistent) {
    throw InputError(r.file + ": train_batch_size " + (total ? std::to_string(*total) : "(not given)") +
                         " != train_micro_batch_size_per_gpu " + (micro ? std::to_string(*micro) : "(not given)") +
                         " x gradient_accumulation_steps " + (steps ? std::to_string(*steps) : "(not given)") + " x dp " +
                         std::to_string(dp),
                     "DeepSpeed refuses this too; check --gpus and the three batch keys");
  }
}

// ZeRO-Offload and ZeRO-Infinity (zero_optimization.offload_optimizer / offload_param with device
// "cpu" or "nvme"; the older cpu_offload / cpu_offload_params switches): refused until modeled, as
// the prediction would be a GPU-only job's. Device "none" is no offload.
void refuse_offload(const Json& z, const std::string& file) {
  std::vector<std::string> problems;
  for (const char* key : {"offload_optimizer", "offload_param"}) {
    if (!z.contains(key) || z[key].is_null()) continue;
    const Json& section = z[key];
    const Json device = section.is_object() && section.contains("device") ? section["device"] : Json("none");
    if (device == "none") continue;
    problems.push_back(file + ": /zero_optimization/" + key + "/device: " + device.dump() + ": " +
                       (std::string(key) == "offload_optimizer" ? "the optimizer states and their step" : "the parameters") +
                       " offloaded to " + (device == "nvme" ? "NVMe (ZeRO-Infinity)" : "host memory (ZeRO-Offload)") +
                       "; trainsim does not model offload yet");
  }
  for (const char* key : {"cpu_offload", "cpu_offload_params"}) {
    if (z.contains(key) && z[key] == true) {
      problems.push_back(file + ": /zero_optimization/" + key + ": true: ZeRO-Offload (host memory); trainsim does not model offload yet");
    }
  }
  if (!problems.empty()) {
    throw InputError(problems, "set the device to \"none\" (or remove the section) to predict the job without offload, and compare with "
                               "the job's measured memory");
  }
}

// The ZeRO stage and overlap_comm where the config states them; DeepSpeed's preset has the rest.
void read_zero(const Json& j, const DeepSpeedReader& r, ImportedJob& job, StatedKnobs& stated) {
  ParallelPlan& p = job.plan;
  if (!j.contains("zero_optimization")) return;
  const Json& z = j["zero_optimization"];
  if (!z.is_object()) throw InputError(r.file + ": /zero_optimization: expected an object, got " + z.dump(), kDeepSpeedHint);
  if (z.contains("stage")) {
    if (!z["stage"].is_number_integer() || z["stage"].get<int64_t>() < 0 || z["stage"].get<int64_t>() > 3) {
      throw InputError(r.file + ": /zero_optimization/stage: expected 0, 1, 2 or 3, got " + z["stage"].dump(), kDeepSpeedHint);
    }
    p.zero_stage = z["stage"].get<int>();
    stated.keys.push_back("zero_stage");
  }
  if (z.contains("overlap_comm")) {
    if (!z["overlap_comm"].is_boolean()) throw InputError(r.file + ": /zero_optimization/overlap_comm: expected true or false, got " + z["overlap_comm"].dump(), kDeepSpeedHint);
    p.dp_overlap = z["overlap_comm"].get<bool>();
    stated.keys.push_back("dp_overlap");
  } else if (p.zero_stage == 3) {
    p.dp_overlap = true;  // DeepSpeed turns overlap_comm on for stage 3 unless stated
    stated.keys.push_back("dp_overlap");
  }
  // The buckets: elements, a number (DeepSpeed reads 5e8 and 500000000 alike); "auto" is the Hugging
  // Face Trainer's (hidden^2 and 0.9 hidden^2): not stated, DeepSpeed's defaults.
  const auto bucket = [&](const char* key, double& into) {
    if (!z.contains(key) || z[key].is_null()) return;
    const Json& v = z[key];
    if (v == "auto") {
      job.notes.push_back(std::string("zero_optimization.") + key + " is \"auto\" (set by the launcher): DeepSpeed's default taken");
      return;
    }
    if (!v.is_number() || v.get<double>() < 1 || v.get<double>() > 1e12) {
      throw InputError(r.file + ": /zero_optimization/" + key + ": expected a number of elements from 1 to 1e12, got " + v.dump(), kDeepSpeedHint);
    }
    into = v.get<double>();
  };
  bucket("reduce_bucket_size", p.deepspeed_reduce_bucket);
  bucket("stage3_prefetch_bucket_size", p.deepspeed_prefetch_bucket);
  if (z.contains("contiguous_gradients")) {
    if (!z["contiguous_gradients"].is_boolean()) {
      throw InputError(r.file + ": /zero_optimization/contiguous_gradients: expected true or false, got " + z["contiguous_gradients"].dump(), kDeepSpeedHint);
    }
    p.deepspeed_contiguous_gradients = z["contiguous_gradients"].get<bool>();
  }
  refuse_offload(z, r.file);
  list_unread(z, "zero_optimization.",
              {"stage", "overlap_comm", "offload_optimizer", "offload_param", "reduce_bucket_size", "stage3_prefetch_bucket_size",
               "contiguous_gradients"},
              {"stage3_gather_16bit_weights_on_model_save"}, job);
}

// activation_checkpointing configures DeepSpeed's checkpointing (deepspeed.checkpointing,
// docs/code-docs/source/activation-checkpointing.rst) but does not turn it on: the model code calls
// deepspeed.checkpointing.checkpoint on the layers it chooses (Megatron-DeepSpeed: with
// --checkpoint-activations). So the section implies no recomputation; the note says what to pass.
// Its keys: partition_activations splits the checkpoints over the model-parallel ranks and
// synchronize_checkpoint_boundary synchronizes the device at each (not modeled);
// contiguous_memory_optimization and number_checkpoints lay the checkpoints out in one buffer, and
// profile times them (no effect on the totals); cpu_checkpointing moves them to the host (refused).
void read_checkpointing(const Json& j, const std::string& file, ImportedJob& job) {
  job.plan.recompute = Recompute::kNone;
  if (!j.contains("activation_checkpointing")) return;
  const Json& a = j["activation_checkpointing"];
  if (!a.is_object()) throw InputError(file + ": /activation_checkpointing: expected an object, got " + a.dump(), kDeepSpeedHint);
  if (a.contains("cpu_checkpointing") && a["cpu_checkpointing"] == true) {
    throw InputError(file + ": /activation_checkpointing/cpu_checkpointing: true: the checkpointed activations on the host; trainsim "
                            "does not model host offload yet",
                     "set it to false to predict the job on GPUs alone, and compare with the job's measured memory");
  }
  job.notes.push_back("activation_checkpointing configures DeepSpeed's checkpointing but does not turn it on (the model calls "
                      "deepspeed.checkpointing.checkpoint): priced without recomputation; add --recompute full if the model "
                      "checkpoints every layer (Megatron-DeepSpeed: --checkpoint-activations)");
  list_unread(a, "activation_checkpointing.", {"cpu_checkpointing"},
              {"contiguous_memory_optimization", "number_checkpoints", "profile"}, job);
}

}  // namespace

ImportedJob import_deepspeed(const std::string& json_text, const std::string& file, int64_t gpus) {
  const Json j = parse_json_text(json_text, file);
  if (!j.is_object()) throw InputError(file + ": a DeepSpeed config is a JSON object", "see deepspeed.ai/docs/config-json");
  ImportedJob job;
  job.framework = "deepspeed";
  const DeepSpeedReader r{file, job};
  StatedKnobs stated{{"micro_batch", "global_batch"}};
  read_batch(j, r, gpus, job);
  read_zero(j, r, job, stated);
  const bool bf16 = r.enabled(j, "bf16"), fp16 = r.enabled(j, "fp16");
  job.plan.precision = bf16 ? Precision::kBf16 : fp16 ? Precision::kFp16 : Precision::kFp32;
  read_checkpointing(j, r.file, job);
  list_unread(j, "",
              {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "zero_optimization",
               "bf16", "fp16", "activation_checkpointing"},
              {"optimizer", "scheduler", "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "wandb", "tensorboard",
               "csv_monitor", "comms_logger", "flops_profiler", "zero_allow_untested_optimizer", "dump_state"},
              job);
  for (const char* section : {"bf16", "fp16"}) {
    if (j.contains(section) && j[section].is_object()) {
      list_unread(j[section], std::string(section) + ".", {"enabled"},
                  {"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale", "consecutive_hysteresis"},
                  job);
    }
  }
  apply_framework_preset(framework_preset(job.framework), job.plan, stated);  // ZeRO-0, overlap_comm off
  job.defaulted.push_back("dp");
  return job;
}

std::vector<std::string> import_report(const ImportedJob& job) {
  auto joined = [](const std::vector<std::string>& list) {
    std::string text;
    for (const std::string& entry : list) text += (text.empty() ? "" : ", ") + entry;
    return text;
  };
  std::vector<std::string> lines;
  if (!job.unknown.empty()) lines.push_back("unknown, not read: " + joined(job.unknown));
  if (!job.not_modeled.empty()) lines.push_back("known, not modeled (the prediction may be off): " + joined(job.not_modeled));
  if (!job.no_effect.empty()) lines.push_back("known, no effect on speed or memory: " + joined(job.no_effect));
  return lines;
}

ParallelPlan parse_deepspeed_config(const std::string& json_text, int64_t gpus) {
  return import_deepspeed(json_text, "DeepSpeed config", gpus).plan;
}

}  // namespace trainsim
