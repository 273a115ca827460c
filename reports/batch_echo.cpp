// The batch, sequence and token echo of a plan.
#include "reports/batch_echo.hpp"

#include "reports/text_table.hpp"

namespace trainsim {

BatchEcho make_batch_echo(const ModelSpec& model, const ParallelPlan& plan, std::string global_batch_default,
                          std::string seq_len_source) {
  BatchEcho e;
  e.global_batch = plan.global_batch;
  e.micro_batches = plan.dp * plan.micro_batch > 0 ? plan.micro_batches() : 0;
  e.seq_len = model.seq_len;
  e.global_batch_default = std::move(global_batch_default);
  e.seq_len_from_config_maximum = seq_len_source == kSeqLenFromConfigMaximum;
  e.seq_len_source = std::move(seq_len_source);
  return e;
}

std::string count_micro_batches(int64_t n) { return std::to_string(n) + (n == 1 ? " micro-batch" : " micro-batches"); }

std::string batch_echo_text(const BatchEcho& e) {
  std::string text = "global batch " + std::to_string(e.global_batch) + (e.global_batch == 1 ? " sequence" : " sequences");
  if (!e.global_batch_default.empty()) text += " (default: " + e.global_batch_default + ")";
  text += ", seq len " + std::to_string(e.seq_len);
  if (!e.seq_len_source.empty()) text += " (" + e.seq_len_source + ")";
  text += ", " + format_count(e.tokens()) + " tokens per iteration";
  if (e.seq_len_from_config_maximum) {
    text += "\n  hint: a Hugging Face config states the longest context the model supports, not the length it trains at; "
            "give --seq-len (e.g. --seq-len 8192) for the training run's";
  }
  return text;
}

nlohmann::ordered_json batch_echo_json(const BatchEcho& e) {
  nlohmann::ordered_json j;
  j["global_batch"] = e.global_batch;
  j["global_batch_default"] = e.global_batch_default.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.global_batch_default);
  j["micro_batches"] = e.micro_batches;
  j["seq_len"] = e.seq_len;
  j["seq_len_source"] = e.seq_len_source.empty() ? std::string("--seq-len") : e.seq_len_source == kSeqLenFromModel ? std::string("model") : e.seq_len_source;
  j["tokens_per_iteration"] = e.tokens();
  return j;
}

}  // namespace trainsim
