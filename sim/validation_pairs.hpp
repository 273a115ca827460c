// Published runs that differ in one thing, for the ratio questions a plan is chosen by: the same
// plan on two GPU types ("how much faster is the GB200 than the B200 for my model?") and the same
// plan in two precisions ("what does FP8 buy?"). Each pair's error is the predicted ratio over the
// measured one, minus 1: a model can be off on both runs alike and still answer the question.
// `validate` prints them after the group summary; docs/validation.md "Pairs".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/validation.hpp"

namespace trainsim {

enum class PairKind {
  kGpu,        // one group, model, GPU count, layout, batch and precision; two GPU types
  kPrecision,  // one group, model, GPU type and count, layout, batch and options but the FP8 ones; two precisions
};

const char* to_string(PairKind kind);

struct RunPair {
  PairKind kind = PairKind::kGpu;
  const RunResult* from = nullptr;  // the ratio is `to` over `from`
  const RunResult* to = nullptr;
  double measured_ratio = 0;   // measured tokens/s per GPU of `to` over `from`
  double predicted_ratio = 0;  // the same, predicted

  double error() const { return predicted_ratio / measured_ratio - 1.0; }
};

struct PairSummary {
  int64_t count = 0;
  int64_t within_ten_percent = 0;
  double mean_abs_error = 0;
  double max_abs_error = 0;
};

// Every pair of predicted runs (with a measured throughput) of one kind, in file order of the
// earlier run; a key with several runs of each side (releases of one recipe) pairs each with each.
// `from` is the GPU type first by name, or the precision first in Precision's order (BF16 first).
std::vector<RunPair> same_plan_pairs(const ValidationResult& v, PairKind kind);

// The same with the caller's key: runs of one key pair across the kind's sides (a test pairs the
// Megatron-Bridge tables' rows by the release their id names).
std::vector<RunPair> pairs_by_key(const ValidationResult& v, PairKind kind, const std::function<std::string(const PublishedRun&)>& key);

PairSummary summarize_pairs(const std::vector<RunPair>& pairs);

}  // namespace trainsim
