// Reading and writing our model JSON.
#include "model/model_json.hpp"

#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"

namespace trainsim {

namespace {

// Defaults by FFN family: GELU models follow Megatron GPT / GPT-3 (LayerNorm, learned positions,
// tied embeddings, biases, dropout); SwiGLU models follow Llama (RMSNorm, RoPE, untied, no biases,
// no dropout). docs/model-json.md lists them.
void apply_family_defaults(ModelSpec& m) {
  const bool gpt = m.ffn_kind == FfnKind::kGelu;
  m.norm = gpt ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  m.position = gpt ? PositionKind::kLearned : PositionKind::kRope;
  m.tied_embeddings = gpt;
  m.linear_bias = gpt;
  m.dropout = gpt;
}

}  // namespace

ModelSpec read_model(JsonObjectReader& r) {
  ModelSpec m;
  m.name = r.required_string("name");
  m.layers = r.required_int("layers", 1);
  const size_t problems_before_shape = r.problems().size();
  m.hidden = r.required_int("hidden", 1);
  m.heads = r.required_int("heads", 1);
  // A bad hidden or heads is reported once: head_dim is not derived from its placeholder.
  const bool shape_read = r.problems().size() == problems_before_shape;
  m.kv_heads = r.optional_int("kv_heads", 1).value_or(m.heads);
  m.ffn_hidden = r.required_int("ffn_hidden", 1);
  m.ffn_kind = r.required_choice("ffn_kind", {"gelu", "swiglu"}) == "gelu" ? FfnKind::kGelu : FfnKind::kSwiglu;
  m.vocab = r.required_int("vocab", 1);
  m.seq_len = r.required_int("seq_len", 1);
  apply_family_defaults(m);

  if (auto mla = r.optional_object("mla")) {
    MlaSpec spec;
    spec.q_lora_rank = mla->optional_int("q_lora_rank", 0).value_or(0);
    spec.kv_lora_rank = mla->required_int("kv_lora_rank", 1);
    spec.qk_nope_head_dim = mla->required_int("qk_nope_head_dim", 1);
    spec.qk_rope_head_dim = mla->required_int("qk_rope_head_dim", 1);
    spec.v_head_dim = mla->required_int("v_head_dim", 1);
    mla->reject_unknown_keys();
    m.mla = spec;
  }
  if (auto head_dim = r.optional_int("head_dim", 1)) {
    m.head_dim = *head_dim;
  } else if (m.mla) {
    m.head_dim = m.mla->v_head_dim;  // MLA: head_dim is the V head width
  } else if (shape_read && m.heads > 0 && m.hidden % m.heads != 0) {
    r.add_problem("head_dim", "hidden (" + std::to_string(m.hidden) + ") is not a multiple of heads (" +
                                  std::to_string(m.heads) + "), so head_dim must be given");
  } else if (m.heads > 0) {
    m.head_dim = m.hidden / m.heads;
  }
  if (auto v = r.optional_choice("norm", {"layernorm", "rmsnorm"})) {
    m.norm = *v == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  }
  if (auto v = r.optional_choice("position", {"learned", "rope", "alibi"})) {
    m.position = *v == "learned" ? PositionKind::kLearned : *v == "rope" ? PositionKind::kRope : PositionKind::kAlibi;
  }
  m.rope_theta = r.optional_number("rope_theta", 1.0).value_or(m.rope_theta);
  m.rope_attention_factor = r.optional_number("rope_attention_factor", 0.0).value_or(1.0);
  m.max_positions = r.optional_int("max_positions", 1).value_or(m.seq_len);
  m.tied_embeddings = r.optional_bool("tied_embeddings").value_or(m.tied_embeddings);
  m.linear_bias = r.optional_bool("linear_bias").value_or(m.linear_bias);
  m.qkv_bias = r.optional_bool("qkv_bias").value_or(false);
  m.dropout = r.optional_bool("dropout").value_or(m.dropout);
  if (auto moe = r.optional_object("moe")) {
    MoeSpec spec;
    spec.experts = moe->required_int("experts", 1);
    spec.top_k = moe->required_int("top_k", 1);
    spec.expert_ffn_hidden = moe->optional_int("expert_ffn_hidden", 1).value_or(m.ffn_hidden);
    spec.shared_experts = moe->optional_int("shared_experts", 0).value_or(0);
    spec.dense_layers = moe->optional_int("dense_layers", 0).value_or(0);
    moe->reject_unknown_keys();
    m.moe = spec;
  }
  if (auto window = r.optional_int("sliding_window", 1)) {
    m.sliding_window = *window;
    m.sliding_window_layers = r.optional_int("sliding_window_layers", 0).value_or(m.layers);
  } else if (r.optional_int("sliding_window_layers", 0)) {
    r.add_problem("sliding_window_layers", "is given without sliding_window (the window's length in tokens)");
  }
  m.glu_clamp = r.optional_number("glu_clamp", 0.0).value_or(0.0);
  m.mtp_layers = r.optional_int("mtp_layers", 0).value_or(0);
  m.params_b_stated = r.optional_number("params_b", 0.0);
  m.source = r.optional_string("source").value_or("");
  r.reject_unknown_keys();
  return m;
}

ModelSpec load_model_file(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  ProblemList problems;
  JsonObjectReader reader(doc, path, "", problems);
  ModelSpec m = read_model(reader);
  if (problems.empty()) problems.add_all(validate_model(m, path));
  problems.throw_if_any("docs/model-json.md lists every key, its meaning and its default");
  return m;
}

nlohmann::ordered_json model_to_json(const ModelSpec& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = m.head_dim;
  j["ffn_hidden"] = m.ffn_hidden;
  j["ffn_kind"] = to_string(m.ffn_kind);
  j["vocab"] = m.vocab;
  j["seq_len"] = m.seq_len;
  j["max_positions"] = m.max_positions;
  j["norm"] = to_string(m.norm);
  j["position"] = to_string(m.position);
  if (m.position == PositionKind::kRope) j["rope_theta"] = m.rope_theta;
  if (m.rope_attention_factor != 1.0) j["rope_attention_factor"] = m.rope_attention_factor;
  j["tied_embeddings"] = m.tied_embeddings;
  j["linear_bias"] = m.linear_bias;
  j["qkv_bias"] = m.qkv_bias;
  j["dropout"] = m.dropout;
  if (m.moe) {
    j["moe"] = {{"experts", m.moe->experts}, {"top_k", m.moe->top_k}, {"expert_ffn_hidden", m.moe->expert_ffn_hidden},
                {"shared_experts", m.moe->shared_experts}};
    if (m.moe->dense_layers > 0) j["moe"]["dense_layers"] = m.moe->dense_layers;
  }
  if (m.mla) {
    j["mla"] = {{"q_lora_rank", m.mla->q_lora_rank}, {"kv_lora_rank", m.mla->kv_lora_rank}, {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla->qk_rope_head_dim}, {"v_head_dim", m.mla->v_head_dim}};
  }
  if (m.sliding_window > 0) {
    j["sliding_window"] = m.sliding_window;
    j["sliding_window_layers"] = m.sliding_window_layers;
  }
  if (m.glu_clamp > 0) j["glu_clamp"] = m.glu_clamp;
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  if (m.params_b_stated) j["params_b"] = *m.params_b_stated;
  if (!m.source.empty()) j["source"] = m.source;
  return j;
}

}  // namespace trainsim
