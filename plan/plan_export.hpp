// A plan as what people paste into their job: Megatron-LM arguments, a DeepSpeed config, or a
// torchrun / srun line around Megatron's pretrain_gpt.py. The parsers read the same text back
// (round trip, tested) so existing launch settings can be imported too.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

enum class ExportTarget { kMegatron, kDeepSpeed, kTorchrun };

ExportTarget parse_export_target(const std::string& name);

// Throws InputError when the target cannot express the plan (e.g. ZeRO-2 in Megatron-LM). Without
// a model (null) only the parallelism arguments are written (and interleaving cannot be).
std::string export_plan(const ModelSpec* model, const ParallelPlan& plan, int64_t gpus_per_node, ExportTarget target);

// Megatron-LM arguments (as export_plan writes them) for a job of `gpus` ranks.
ParallelPlan parse_megatron_args(const std::string& args, const ModelSpec& model, int64_t gpus);
// A DeepSpeed config JSON for a job of `gpus` ranks (tp = pp = 1).
ParallelPlan parse_deepspeed_config(const std::string& json_text, int64_t gpus);

}  // namespace trainsim
