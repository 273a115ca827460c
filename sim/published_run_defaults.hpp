// What a published run's source leaves out, filled into a copy of the run's JSON before it is read:
// the model's architecture where a catalog model of its name is that architecture (head width,
// biases, sliding window, multi-head latent attention, dense first layers, multi-token
// prediction), GPT-3-like sources' FFN and vocabulary, the network of the GPU's reference server,
// and what a framework recipe for the run's model and layout runs (its recomputation, MoE
// dispatcher and EP overlap, pipeline layout). Every filled key is recorded as
// "section.key=value (why)" (docs/validation.md "Defaults for what a source does not state").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim {

// Fills `run` (one run's JSON) in place where it is silent, appending each default to `used`;
// `unsupported` says why a run cannot be priced when no default can stand in.
void fill_source_defaults(nlohmann::json& run, std::vector<std::string>& used, std::string& unsupported);

// A size the defaults may compute with: a positive integer within the largest size bound (so a
// product of two stays exact), else `fallback` (the reader reports a zero, negative, mistyped or
// out-of-bound size with its key; the defaults must not divide or multiply by it first).
int64_t stated_size(const nlohmann::json& object, const char* key, int64_t fallback);

}  // namespace trainsim
