// A plan as a torchtitan job config: the TOML JobConfig (sections job, model, training,
// parallelism, activation_checkpoint, compile, quantize.linear.float8) that torchtitan read up to
// its move to Python configs (pytorch/torchtitan#2386, February 2026; keys as of 238fa99, the
// commit before it). Also torchtitan's pipeline layer split, which the reader
// (interop/torchtitan_import.cpp) shares. Plans torchtitan cannot run are refused, naming the value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

// The job TOML for `plan` on `model`. Throws InputError listing every setting torchtitan cannot
// express (ZeRO-1/2, Megatron's selective recompute, fp16, ep > 1, unfused attention, ...).
// `gpus_per_node` only shapes the launch line in the header comment.
std::string export_torchtitan(const ModelSpec& model, const ParallelPlan& plan, int64_t gpus_per_node);

// Transformer layers on each of `stages` virtual stages as torchtitan places them
// (generate_llm_fqn_per_model_part in torchtitan/distributed/pipeline_parallel.py): the layers plus
// `first_less` (the embedding's weight) and `last_less` (the output's) split evenly, the earliest
// stages taking the remainder, the weights then taken off the first and the last stage. Empty
// where torchtitan refuses the split (a stage left without layers, a weight above a stage's share).
std::vector<int64_t> torchtitan_stage_layers(int64_t layers, int64_t stages, int64_t first_less, int64_t last_less);

// torchtitan's Llama 3 flavor ("8B", "70B", "405B") with the architecture of `model`, "" if none.
std::string torchtitan_llama3_flavor(const ModelSpec& model);

}  // namespace trainsim
