// Importing a plan from what people already launch with (`--from FORMAT FILE`): a Megatron-LM
// launch script or argument list, a DeepSpeed config JSON, or a torchtitan job TOML. Each importer
// returns the plan with what the file stated (the framework's own default for what it leaves out),
// the world size and sequence length when the file says them, and every flag or key it did not use,
// sorted: unknown ("did you mean"), known but not modeled (the prediction may be off), known without
// effect on speed or memory. Nothing is silently ignored; host offload is refused until modeled. A malformed value is an
// InputError naming the file, the flag or key, and the value. The writers are interop/plan_export.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

enum class ImportFormat { kMegatron, kDeepSpeed, kTorchtitan, kNemo };

ImportFormat parse_import_format(const std::string& name);
const char* to_string(ImportFormat format);

struct ImportedJob {
  std::string file;  // where it came from, for messages
  ParallelPlan plan;
  // Plan keys (plan JSON spelling) the file did not determine, derived on the command line as for
  // a --plan file that leaves them out: "dp" (from the GPU count), "global_batch" (dp x micro_batch).
  std::vector<std::string> defaulted;
  // Known, not modeled: each may change speed or memory, so the prediction may be off
  // ("--overlap-param-gather (the ZeRO-1 parameter all-gather overlapped with the forward)").
  std::vector<std::string> not_modeled;
  std::vector<std::string> unknown;    // not known to the importer: "--sequence-paralel (did you mean --sequence-parallel?)"
  std::vector<std::string> no_effect;  // known, no effect on speed or memory: "--lr", "--seed"
  std::vector<std::string> notes;        // assumptions the import made (printed with the file's name)
  int64_t gpus = 0;                      // the file's world size (torchrun/srun, torchtitan degrees); 0: not stated
  int64_t seq_len = 0;                   // the file's training sequence length; 0: not stated
  std::string framework;                 // framework preset its kernels follow ("torchtitan"), "" for none
};

// What the import read but did not use, as lines for the user (the CLI prefixes the file's name):
// unknown flags with the nearest known one, flags not modeled (the prediction may be off), flags
// without effect on speed or memory. Empty lists give no line.
std::vector<std::string> import_report(const ImportedJob& job);

// `file` names the input in messages. `gpus` > 0 is the command line's --gpus (it wins over the
// file's); 0 when not given. `model` is the --model the plan runs (its layer count places the pipeline
// stages; model arguments in the file must agree with it).
ImportedJob import_job(ImportFormat format, const std::string& text, const std::string& file, const ModelSpec& model,
                       int64_t gpus);
ImportedJob import_megatron(const std::string& text, const std::string& file, const ModelSpec& model, int64_t gpus);
ImportedJob import_deepspeed(const std::string& json_text, const std::string& file, int64_t gpus);
ImportedJob import_torchtitan(const std::string& toml_text, const std::string& file, const ModelSpec& model, int64_t gpus);
// NeMo 1.x / NeMo-Megatron-Launcher training configs and Megatron-Bridge ConfigContainer YAML
// (interop/nemo_import.cpp): read as the Megatron-LM arguments their keys stand for.
ImportedJob import_nemo(const std::string& yaml_text, const std::string& file, const ModelSpec& model, int64_t gpus);

// The plans alone, for a job of `gpus` ranks (the round trips of interop/plan_export.hpp).
ParallelPlan parse_megatron_args(const std::string& args, const ModelSpec& model, int64_t gpus);
ParallelPlan parse_deepspeed_config(const std::string& json_text, int64_t gpus);
ParallelPlan parse_torchtitan_toml(const std::string& toml_text, const ModelSpec& model, int64_t gpus);

}  // namespace trainsim
