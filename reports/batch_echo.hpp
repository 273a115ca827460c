// What one iteration processes, said on every plan line of `model` and `predict`: the global batch
// in sequences (and the rule that chose it when the user gave none), the sequence length (and
// where it came from) and the tokens per iteration. In: the resolved plan and model and the two
// notes the command line wrote; out: one line of text and a JSON object. It chooses nothing.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

// The seq_len_source of a Hugging Face config read without --seq-len.
inline constexpr const char* kSeqLenFromConfigMaximum = "max_position_embeddings of the Hugging Face config";
// The seq_len_source of a built-in model or a model JSON read without --seq-len (JSON: "model").
inline constexpr const char* kSeqLenFromModel = "the model's; --seq-len sets yours";

struct BatchEcho {
  int64_t global_batch = 0;          // sequences per iteration
  int64_t micro_batches = 0;         // per DP rank
  int64_t seq_len = 0;               // tokens per sequence
  std::string global_batch_default;  // the rule that chose it ("" when stated)
  std::string seq_len_source;        // where the sequence length came from ("" when --seq-len)
  bool seq_len_from_config_maximum = false;  // a Hugging Face config's context maximum, not a training length
  int64_t tokens() const { return global_batch * seq_len; }
};

BatchEcho make_batch_echo(const ModelSpec& model, const ParallelPlan& plan, std::string global_batch_default,
                          std::string seq_len_source);

// "1 micro-batch", "8 micro-batches".
std::string count_micro_batches(int64_t n);

// "global batch 16 sequences (default: ...), seq len 8192 (...), 131,072 tokens per iteration"
// and, for a configuration's maximum context, a hint line naming --seq-len.
std::string batch_echo_text(const BatchEcho& echo);
// {"global_batch": .., "global_batch_default": ..|null, "seq_len": .., "seq_len_source": ..,
//  "tokens_per_iteration": ..}
nlohmann::ordered_json batch_echo_json(const BatchEcho& echo);

}  // namespace trainsim
