// Plan validation: the constraints Megatron-LM and DeepSpeed enforce, each reported with values.
#include "plan/parallel_plan.hpp"

#include <algorithm>

namespace trainsim {

namespace {
std::string s(int64_t x) { return std::to_string(x); }

// Megatron-Core's context parallelism splits each sequence in 2 x cp chunks (each rank takes one
// from each end, balancing causal attention) and runs Transformer Engine's fused ring attention.
template <typename Add>
void check_context_parallel(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  if (p.cp <= 1) return;
  if (m.seq_len % (2 * p.cp) != 0) {
    add("cp", "cp (" + s(p.cp) + ") needs seq_len (" + s(m.seq_len) + ") divisible by 2 x cp (" + s(2 * p.cp) +
                  ": two load-balanced chunks per rank)" + of_model);
  } else if (p.sequence_parallel && (m.seq_len / p.cp) % p.tp != 0) {
    add("cp", "sequence parallelism needs each CP rank's tokens (seq_len / cp = " + s(m.seq_len / p.cp) +
                  ") divisible by tp (" + s(p.tp) + ")");
  }
  if (p.attention != AttentionKernel::kFlash) add("cp", "context parallelism runs fused (flash) ring attention; attention is unfused");
}
}  // namespace

ProblemList validate_plan(const ParallelPlan& p, const ModelSpec& m, const std::string& where) {
  ProblemList problems;
  auto add = [&](const std::string& key, const std::string& message) {
    problems.add(where + ": " + key + ": " + message);
  };
  const std::pair<const char*, int64_t> sizes[] = {{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"vpp", p.vpp},
                                                   {"cp", p.cp}, {"ep", p.ep}, {"micro_batch", p.micro_batch},
                                                   {"global_batch", p.global_batch}};
  for (const auto& [key, value] : sizes) {
    if (value < 1) add(key, std::string(key) + " (" + s(value) + ") must be >= 1");
  }
  if (!problems.empty()) return problems;

  const std::string of_model = " of model \"" + m.name + "\"";
  if (m.heads % p.tp != 0) add("tp", "tp (" + s(p.tp) + ") must divide heads (" + s(m.heads) + ")" + of_model);
  if (m.kv_heads % p.tp != 0) {
    add("tp", "tp (" + s(p.tp) + ") must divide kv_heads (" + s(m.kv_heads) + ")" + of_model);
  }
  const int64_t ffn = m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden;
  if (ffn % p.tp != 0) add("tp", "tp (" + s(p.tp) + ") must divide ffn_hidden (" + s(ffn) + ")" + of_model);
  if (p.pp > m.layers) add("pp", "pp (" + s(p.pp) + ") must be <= layers (" + s(m.layers) + ")" + of_model);
  if (p.global_batch % (p.dp * p.micro_batch) != 0) {
    add("global_batch", "global_batch (" + s(p.global_batch) + ") must be a multiple of dp x micro_batch (" + s(p.dp) +
                            " x " + s(p.micro_batch) + " = " + s(p.dp * p.micro_batch) + ")");
  }
  if (p.sequence_parallel && p.tp == 1) add("sequence_parallel", "sequence parallelism needs tp > 1 (tp is 1)");
  if (p.sequence_parallel && m.seq_len % p.tp != 0) {
    add("sequence_parallel", "tp (" + s(p.tp) + ") must divide seq_len (" + s(m.seq_len) + ") to split the sequence");
  }
  if (p.zero_stage < 0 || p.zero_stage > 3) add("zero_stage", "zero stage (" + s(p.zero_stage) + ") must be 0, 1, 2 or 3");
  if (p.zero_stage >= 2 && p.pp > 1) {
    add("zero_stage", "ZeRO-" + s(p.zero_stage) + " with pipeline parallelism (pp " + s(p.pp) +
                          ") is not supported by Megatron-LM or DeepSpeed; use ZeRO-1 (distributed optimizer)");
  }
  if (p.vpp > 1 && p.schedule != Schedule::kInterleaved) {
    add("vpp", "vpp (" + s(p.vpp) + ") > 1 needs the interleaved schedule (schedule is " + to_string(p.schedule) + ")");
  }
  if (p.schedule == Schedule::kInterleaved) {
    if (p.pp == 1) add("schedule", "the interleaved schedule needs pp > 1");
    if (p.vpp == 1) add("vpp", "the interleaved schedule needs vpp > 1 model chunks per stage (vpp is 1)");
    // Layers that pp x vpp does not divide go one each to the earliest virtual stages (as NeMo's
    // 405B recipes place 126 layers on 64); every virtual stage needs at least one layer.
    if (m.layers < p.pp * p.vpp) {
      add("vpp", "pp x vpp (" + s(p.pp) + " x " + s(p.vpp) + " = " + s(p.pp * p.vpp) + ") virtual stages need at least one layer each; the model has " +
                     s(m.layers) + of_model);
    }
    if (p.global_batch % (p.dp * p.micro_batch) == 0 && p.micro_batches() % p.pp != 0) {
      add("global_batch", "the interleaved schedule needs micro-batches per DP rank (" + s(p.micro_batches()) +
                              ") to be a multiple of pp (" + s(p.pp) + ")");
    }
  }
  check_context_parallel(p, m, of_model, add);
  if (p.ep > 1) add("ep", "expert parallelism (ep " + s(p.ep) + ") is parsed but not modeled yet; use ep 1");
  return problems;
}

int64_t layers_on_stage(const ModelSpec& m, const ParallelPlan& p, int64_t stage) {
  if (p.vpp > 1 && m.layers % (p.pp * p.vpp) != 0) {
    int64_t layers = 0;
    for (int64_t c = 0; c < p.vpp; ++c) layers += layers_of_chunk(m, p, stage, c).size();
    return layers;
  }
  return m.layers / p.pp + (stage < m.layers % p.pp ? 1 : 0);
}

int64_t first_layer_of_stage(const ModelSpec& m, const ParallelPlan& p, int64_t stage) {
  return stage * (m.layers / p.pp) + std::min(stage, m.layers % p.pp);
}

LayerRange layers_of_chunk(const ModelSpec& m, const ParallelPlan& p, int64_t stage, int64_t chunk) {
  const int64_t stages = p.pp * p.vpp, vs = chunk * p.pp + stage;
  LayerRange r;
  if (p.vpp > 1 && m.layers % stages != 0 && (m.layers + 2) % stages == 0) {
    // Megatron-Core's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-
    // split (NeMo's Llama 3.1 405B recipes: 126 layers on 8 x 8 virtual stages): the embedding and
    // the loss count as a layer each, so the first and the last virtual stage hold one layer fewer.
    const int64_t per = (m.layers + 2) / stages;
    r.first = vs == 0 ? 0 : vs * per - 1;
    r.last = std::min(m.layers, (vs + 1) * per - 1);
    return r;
  }
  r.first = vs * (m.layers / stages) + std::min(vs, m.layers % stages);
  r.last = r.first + m.layers / stages + (vs < m.layers % stages ? 1 : 0);
  return r;
}

const char* to_string(Schedule schedule) {
  switch (schedule) {
    case Schedule::kGpipe: return "gpipe";
    case Schedule::k1F1B: return "1f1b";
    case Schedule::kInterleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(NormKernel n) { return n == NormKernel::kEager ? "eager" : "fused"; }

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp32: return "fp32";
    case Precision::kFp8: return "fp8";
  }
  return "?";
}

}  // namespace trainsim
