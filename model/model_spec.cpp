// Validation of ModelSpec and names of its enums.
#include "model/model_spec.hpp"

namespace trainsim {

namespace {
// No model has a billion layers, heads or widths; the bound keeps the checks that add to or
// multiply these sizes (plan/parallel_plan.cpp) inside int64 (found by fuzz/).
constexpr int64_t kMaxModelSize = int64_t{1} << 30;

void require_positive(ProblemList& problems, const std::string& where, const char* key, int64_t value) {
  if (value <= 0) problems.add(where + ": /" + key + ": " + key + " (" + std::to_string(value) + ") must be >= 1");
  if (value > kMaxModelSize) {
    problems.add(where + ": /" + key + ": " + key + " (" + std::to_string(value) + ") must be <= " + std::to_string(kMaxModelSize));
  }
}
}  // namespace

ProblemList validate_model(const ModelSpec& m, const std::string& where) {
  ProblemList p;
  require_positive(p, where, "layers", m.layers);
  require_positive(p, where, "hidden", m.hidden);
  require_positive(p, where, "heads", m.heads);
  require_positive(p, where, "kv_heads", m.kv_heads);
  require_positive(p, where, "head_dim", m.head_dim);
  require_positive(p, where, "ffn_hidden", m.ffn_hidden);
  require_positive(p, where, "vocab", m.vocab);
  require_positive(p, where, "seq_len", m.seq_len);
  if (!p.empty()) return p;  // the relations below need positive sizes
  if (m.heads % m.kv_heads != 0) {
    p.add(where + ": /kv_heads: kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" +
          std::to_string(m.heads) + ") of model \"" + m.name + "\" (each KV head serves a whole group of query heads)");
  }
  if (m.position == PositionKind::kLearned && m.max_positions < m.seq_len) {
    p.add(where + ": /seq_len: seq_len (" + std::to_string(m.seq_len) + ") exceeds the learned position table (" +
          std::to_string(m.max_positions) + " rows, key max_positions) of model \"" + m.name + "\"");
  }
  if (m.moe) {
    require_positive(p, where, "moe/experts", m.moe->experts);
    require_positive(p, where, "moe/top_k", m.moe->top_k);
    require_positive(p, where, "moe/expert_ffn_hidden", m.moe->expert_ffn_hidden);
    if (m.moe->top_k > m.moe->experts) {
      p.add(where + ": /moe/top_k: top_k (" + std::to_string(m.moe->top_k) + ") must be <= experts (" +
            std::to_string(m.moe->experts) + ")");
    }
  }
  return p;
}

const char* to_string(FfnKind kind) { return kind == FfnKind::kGelu ? "gelu" : "swiglu"; }
const char* to_string(NormKind kind) { return kind == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
const char* to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRope: return "rope";
    case PositionKind::kAlibi: return "alibi";
  }
  return "?";
}

}  // namespace trainsim
