// A plan as what people paste into their job: Megatron-LM arguments, a DeepSpeed config, a
// torchrun / srun line around Megatron's pretrain_gpt.py, or a torchtitan job TOML. The importers
// of interop/plan_import.hpp read the same text back (round trip, tested).
#pragma once

#include <cstdint>
#include <string>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

enum class ExportTarget { kMegatron, kDeepSpeed, kTorchrun, kTorchtitan };

ExportTarget parse_export_target(const std::string& name);

// Throws InputError when the target cannot express the plan (e.g. ZeRO-2 in Megatron-LM). Without
// a model (null) only the parallelism arguments are written (and interleaving cannot be); torchtitan
// needs the model.
std::string export_plan(const ModelSpec* model, const ParallelPlan& plan, int64_t gpus_per_node, ExportTarget target);

}  // namespace trainsim
