// Field mapping from Hugging Face configs (transformers' LlamaConfig, MistralConfig, Qwen2Config,
// MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig, GptOssConfig, DeepseekV2Config, DeepseekV3Config, GPT2Config, GPTNeoXConfig) to ModelSpec. HF configs carry many keys we do not
// need, so unknown keys are not errors here; missing keys we need are.
#include "model/hf_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/nearest_name.hpp"

namespace trainsim {

namespace {

const std::map<std::string, std::string>& architecture_to_type() {
  static const std::map<std::string, std::string> table = {
      {"LlamaForCausalLM", "llama"},     {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"},
      {"MixtralForCausalLM", "mixtral"}, {"GPT2LMHeadModel", "gpt2"},       {"GPTNeoXForCausalLM", "gpt_neox"},
      {"Qwen2MoeForCausalLM", "qwen2_moe"}, {"Qwen3MoeForCausalLM", "qwen3_moe"}, {"GptOssForCausalLM", "gpt_oss"},
      {"DeepseekV2ForCausalLM", "deepseek_v2"}, {"DeepseekV3ForCausalLM", "deepseek_v3"},
  };
  return table;
}

const std::vector<std::string> kSupportedTypes = {"llama",   "mistral", "qwen2",       "mixtral",     "qwen2_moe", "qwen3_moe",
                                                  "gpt_oss", "gpt2",    "deepseek_v2", "deepseek_v3", "gpt_neox"};

std::string model_type_of(const nlohmann::json& doc, const std::string& path) {
  if (doc.contains("model_type") && doc["model_type"].is_string()) return doc["model_type"].get<std::string>();
  if (doc.contains("architectures") && doc["architectures"].is_array() && !doc["architectures"].empty() &&
      doc["architectures"][0].is_string()) {
    const std::string arch = doc["architectures"][0].get<std::string>();
    const auto it = architecture_to_type().find(arch);
    if (it != architecture_to_type().end()) return it->second;
    throw InputError(path + ": /architectures/0: \"" + arch + "\" is not a supported architecture; supported: " +
                         "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, MixtralForCausalLM, " +
                         "Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, " +
                         "GPT2LMHeadModel, GPTNeoXForCausalLM",
                     "describe the model in trainsim's model JSON instead (docs/model-json.md)");
  }
  throw InputError(path + ": /model_type: missing (a Hugging Face config names its \"model_type\")",
                   "add \"model_type\", or use trainsim's model JSON (docs/model-json.md)");
}

std::string model_name(const nlohmann::json& doc, const std::string& path, const std::string& type) {
  if (doc.contains("_name_or_path") && doc["_name_or_path"].is_string() &&
      !doc["_name_or_path"].get<std::string>().empty()) {
    return doc["_name_or_path"].get<std::string>();
  }
  const auto parent = std::filesystem::path(path).parent_path().filename().string();
  return parent.empty() ? type : parent;
}

// Llama family: Llama, Mistral, Qwen2, Mixtral, Qwen-MoE and GPT-OSS share field names and the
// SwiGLU/RMSNorm/RoPE layout.
void read_qwen_moe(JsonObjectReader& r, ModelSpec& m);
void read_gpt_oss_moe(JsonObjectReader& r, ModelSpec& m);
void read_deepseek(JsonObjectReader& r, ModelSpec& m);

void read_llama_family(JsonObjectReader& r, const std::string& type, ModelSpec& m) {
  m.hidden = r.required_int("hidden_size", 1);
  m.layers = r.required_int("num_hidden_layers", 1);
  m.heads = r.required_int("num_attention_heads", 1);
  m.kv_heads = r.optional_int("num_key_value_heads", 1).value_or(m.heads);
  m.ffn_hidden = r.required_int("intermediate_size", 1);
  m.vocab = r.required_int("vocab_size", 1);
  m.seq_len = r.required_int("max_position_embeddings", 1);
  m.tied_embeddings = r.optional_bool("tie_word_embeddings").value_or(false);
  m.rope_theta = r.optional_number("rope_theta", 1.0).value_or(m.rope_theta);
  if (auto hd = r.optional_int("head_dim", 1)) m.head_dim = *hd;
  const std::string act = r.optional_string("hidden_act").value_or("silu");
  if (act != "silu" && act != "swish") {
    r.add_problem("hidden_act", "\"" + act + "\" is not supported for " + type + " (expected \"silu\": a SwiGLU FFN)");
  }
  // GPT-OSS has biases on every linear (Q, K, V, O, the router and the experts): linear_bias below.
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    if (r.optional_bool(key).value_or(false) && type != "gpt_oss") {
      r.add_problem(key, std::string(key) + " = true is not supported yet (its bias layout is not modeled)");
    }
  }
  m.ffn_kind = FfnKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRope;
  m.linear_bias = type == "gpt_oss";
  m.qkv_bias = type == "qwen2" || type == "qwen2_moe";  // Qwen2 has biases on Q, K and V only
  m.dropout = false;
  if (type == "mixtral") {
    MoeSpec moe;
    moe.experts = r.required_int("num_local_experts", 1);
    moe.top_k = r.required_int("num_experts_per_tok", 1);
    moe.expert_ffn_hidden = m.ffn_hidden;
    m.moe = moe;
  }
  if (type == "qwen2_moe" || type == "qwen3_moe") read_qwen_moe(r, m);
  if (type == "gpt_oss") read_gpt_oss_moe(r, m);
  if (type == "deepseek_v2" || type == "deepseek_v3") read_deepseek(r, m);
}

// DeepSeek-V2 / V3 (transformers' DeepseekV2Config, DeepseekV3Config; deepseek-ai's config.json):
// multi-head latent attention (q_lora_rank null: Q projected from h, DeepSeek-V2-Lite), the first
// first_k_dense_replace layers dense (intermediate_size), the others n_routed_experts of
// moe_intermediate_size, top num_experts_per_tok, n_shared_experts beside them, and
// num_nextn_predict_layers multi-token-prediction depths (ModelSpec::mtp_layers). The group-limited
// routing (n_group, topk_group) is not modeled; YaRN rope_scaling changes no work.
void read_deepseek(JsonObjectReader& r, ModelSpec& m) {
  MlaSpec mla;
  mla.q_lora_rank = r.optional_int("q_lora_rank", 1).value_or(0);  // null in DeepSeek-V2-Lite: no Q compression
  mla.kv_lora_rank = r.required_int("kv_lora_rank", 1);
  mla.qk_nope_head_dim = r.required_int("qk_nope_head_dim", 1);
  mla.qk_rope_head_dim = r.required_int("qk_rope_head_dim", 1);
  mla.v_head_dim = r.required_int("v_head_dim", 1);
  m.mla = mla;
  m.head_dim = mla.v_head_dim;  // transformers' head_dim key (the rope width) is not the V head width
  m.kv_heads = m.heads;
  MoeSpec moe;
  moe.experts = r.required_int("n_routed_experts", 1);
  moe.top_k = r.required_int("num_experts_per_tok", 1);
  moe.expert_ffn_hidden = r.required_int("moe_intermediate_size", 1);
  moe.shared_experts = r.optional_int("n_shared_experts", 0).value_or(0);
  moe.dense_layers = r.optional_int("first_k_dense_replace", 0).value_or(0);
  m.mtp_layers = r.optional_int("num_nextn_predict_layers", 0).value_or(0);
  if (r.optional_int("moe_layer_freq", 1).value_or(1) != 1) {
    r.add_problem("moe_layer_freq", "dense layers between MoE layers are not modeled (moe_layer_freq must be 1)");
  }
  m.moe = moe;
}

// GPT-OSS (transformers' GptOssConfig): every layer's FFN is num_local_experts experts of
// intermediate_size, its GLU clamped at swiglu_limit (GptOssConfig's default 7.0; glu_clamp), top
// num_experts_per_tok (experts_per_token in OpenAI's own config); attention sinks (one learned
// logit per head) are not modeled.
void read_gpt_oss_moe(JsonObjectReader& r, ModelSpec& m) {
  MoeSpec moe;
  moe.experts = r.required_int("num_local_experts", 1);
  const std::optional<int64_t> top_k = r.optional_int("num_experts_per_tok", 1);
  const std::optional<int64_t> per_token = r.optional_int("experts_per_token", 1);
  if (!top_k && !per_token) r.add_problem("num_experts_per_tok", "missing (the experts each token is routed to)");
  moe.top_k = top_k.value_or(per_token.value_or(1));
  moe.expert_ffn_hidden = m.ffn_hidden;
  m.moe = moe;
  m.glu_clamp = r.optional_number("swiglu_limit", 0.0).value_or(7.0);
}

// Sliding-window attention. GPT-OSS and newer configs list each layer's kind in layer_types
// ("sliding_attention" / "full_attention"); Mistral windows every layer when sliding_window is
// set; Qwen2 only with use_sliding_window, in the layers from max_window_layers on.
void read_sliding_window(const nlohmann::json& doc, JsonObjectReader& r, const std::string& type, ModelSpec& m) {
  if (type == "gpt2" || type == "gpt_neox") return;
  const std::optional<int64_t> window = r.optional_int("sliding_window", 1);
  if (!window) return;
  int64_t windowed = m.layers;
  if (doc.contains("layer_types") && doc["layer_types"].is_array()) {
    windowed = 0;
    for (const auto& kind : doc["layer_types"]) windowed += kind == "sliding_attention" ? 1 : 0;
  } else if (type == "qwen2" || type == "qwen2_moe" || type == "qwen3_moe") {
    if (!r.optional_bool("use_sliding_window").value_or(false)) return;
    windowed = std::max<int64_t>(0, m.layers - r.optional_int("max_window_layers", 0).value_or(0));
  }
  if (windowed == 0) return;
  m.sliding_window = *window;
  m.sliding_window_layers = std::min(windowed, m.layers);
}

// YaRN (rope_scaling with rope_type "yarn"): cos and sin scaled by its attention factor, as stated
// (attention_factor), else the ratio of mscale's to mscale_all_dim's, else 0.1 ln(factor) + 1
// (transformers' _compute_yarn_parameters; Megatron-Core's _yarn_get_concentration_factor, which
// takes the last when either mscale is unset, as Megatron-Bridge's GPT-OSS provider leaves them).
// Multi-head latent attention applies its own fused YaRN RoPE: not read for it.
void read_yarn(const nlohmann::json& doc, JsonObjectReader& r, ModelSpec& m) {
  if (m.mla || !doc.contains("rope_scaling") || !doc["rope_scaling"].is_object()) return;
  const nlohmann::json& y = doc["rope_scaling"];
  const auto number = [&](const char* key) { return y.contains(key) && y[key].is_number() ? std::optional<double>(y[key].get<double>()) : std::nullopt; };
  const std::string type = y.contains("rope_type") && y["rope_type"].is_string() ? y["rope_type"].get<std::string>()
                           : y.contains("type") && y["type"].is_string()        ? y["type"].get<std::string>()
                                                                                  : "";
  const std::optional<double> factor = number("factor");
  if (type != "yarn") return;
  if (!factor || !std::isfinite(*factor) || *factor < 1.0) {
    r.add_problem("rope_scaling", "a \"yarn\" rope_scaling needs a number factor >= 1 (how far the context is stretched; GPT-OSS: 32)");
    return;
  }
  if (*factor == 1.0) return;
  const auto mscale = [&](double scale) { return 0.1 * scale * std::log(*factor) + 1.0; };
  if (const auto stated = number("attention_factor")) m.rope_attention_factor = *stated;
  else if (number("mscale") && number("mscale_all_dim")) m.rope_attention_factor = mscale(*number("mscale")) / mscale(*number("mscale_all_dim"));
  else m.rope_attention_factor = mscale(1.0);
}

// Qwen2-MoE / Qwen3-MoE (transformers' Qwen2MoeConfig, Qwen3MoeConfig): every layer sparse
// (decoder_sparse_step 1, no mlp_only_layers); Qwen2-MoE's shared expert, of
// shared_expert_intermediate_size, counts as that many expert widths.
void read_qwen_moe(JsonObjectReader& r, ModelSpec& m) {
  MoeSpec moe;
  moe.experts = r.required_int("num_experts", 1);
  moe.top_k = r.required_int("num_experts_per_tok", 1);
  moe.expert_ffn_hidden = r.required_int("moe_intermediate_size", 1);
  if (auto shared = r.optional_int("shared_expert_intermediate_size", 0); shared && *shared > 0) {
    if (*shared % moe.expert_ffn_hidden != 0) {
      r.add_problem("shared_expert_intermediate_size", std::to_string(*shared) + " is not a multiple of moe_intermediate_size (" +
                                                           std::to_string(moe.expert_ffn_hidden) + "): shared experts are modeled as whole experts");
    } else {
      moe.shared_experts = *shared / moe.expert_ffn_hidden;
    }
  }
  if (r.optional_int("decoder_sparse_step", 1).value_or(1) != 1) {
    r.add_problem("decoder_sparse_step", "dense layers between sparse ones are not modeled (decoder_sparse_step must be 1)");
  }
  m.moe = moe;
}

void read_gpt2(JsonObjectReader& r, ModelSpec& m) {
  m.hidden = r.required_int("n_embd", 1);
  m.layers = r.required_int("n_layer", 1);
  m.heads = r.required_int("n_head", 1);
  m.kv_heads = m.heads;
  // 4 x n_embd only where it fits in int64 (found by fuzz/); a larger n_embd is refused by validate_model.
  const bool fits = m.hidden <= std::numeric_limits<int64_t>::max() / 4;
  m.ffn_hidden = r.optional_int("n_inner", 1).value_or(fits ? 4 * m.hidden : m.hidden);
  m.vocab = r.required_int("vocab_size", 1);
  m.max_positions = r.required_int("n_positions", 1);
  m.seq_len = r.optional_int("n_ctx", 1).value_or(m.max_positions);
  m.tied_embeddings = r.optional_bool("tie_word_embeddings").value_or(true);
  m.ffn_kind = FfnKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.linear_bias = true;
  m.dropout = r.optional_number("resid_pdrop", 0.0).value_or(0.1) > 0.0;
}

void read_gpt_neox(JsonObjectReader& r, ModelSpec& m) {
  m.hidden = r.required_int("hidden_size", 1);
  m.layers = r.required_int("num_hidden_layers", 1);
  m.heads = r.required_int("num_attention_heads", 1);
  m.kv_heads = m.heads;
  m.ffn_hidden = r.required_int("intermediate_size", 1);
  m.vocab = r.required_int("vocab_size", 1);
  m.seq_len = r.required_int("max_position_embeddings", 1);
  m.tied_embeddings = r.optional_bool("tie_word_embeddings").value_or(false);
  m.ffn_kind = FfnKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kRope;
  m.rope_theta = r.optional_number("rotary_emb_base", 1.0).value_or(m.rope_theta);
  m.linear_bias = true;
  m.dropout = r.optional_number("hidden_dropout", 0.0).value_or(0.0) > 0.0;
}

}  // namespace

bool is_hf_config(const nlohmann::json& doc) {
  return doc.is_object() && (doc.contains("model_type") || doc.contains("architectures"));
}

ModelSpec read_hf_config(const nlohmann::json& doc, const std::string& path) {
  const std::string type = model_type_of(doc, path);
  // Hybrid state-space / attention stacks: trainsim lowers transformer layers only (attention,
  // dense or MoE FFN); a Mamba-2 mixer's selective scan and convolution have no op, cost or
  // memory rule here, so such a model is refused by name rather than priced as a transformer.
  static const std::map<std::string, std::string> kHybrid = {
      {"nemotron_h", "Nemotron-H / Nemotron 3 (Mamba-2 layers among attention and MLP or MoE layers)"},
      {"jamba", "Jamba (Mamba layers among attention layers)"},
      {"zamba2", "Zamba2 (Mamba-2 layers with shared attention blocks)"},
      {"falcon_h1", "Falcon-H1 (Mamba-2 heads beside attention in each layer)"},
      {"mamba", "Mamba (state-space layers only)"},
      {"mamba2", "Mamba-2 (state-space layers only)"},
  };
  if (const auto hybrid = kHybrid.find(type); hybrid != kHybrid.end()) {
    throw InputError(path + ": /model_type: \"" + type + "\" is " + hybrid->second +
                         ": not modeled (trainsim prices transformer layers only; state-space layers have no cost rule); "
                         "supported: " + join_names(kSupportedTypes),
                     "none for now: the hybrid layers cannot be approximated by transformer layers without a measured cost");
  }
  if (std::find(kSupportedTypes.begin(), kSupportedTypes.end(), type) == kSupportedTypes.end()) {
    throw InputError(path + ": /model_type: \"" + type + "\" is not a supported architecture" +
                         did_you_mean(type, kSupportedTypes) + "; supported: " + join_names(kSupportedTypes),
                     "describe the model in trainsim's model JSON instead (docs/model-json.md)");
  }
  ProblemList problems;
  JsonObjectReader reader(doc, path, "", problems);
  ModelSpec m;
  m.name = model_name(doc, path, type);
  m.source = "Hugging Face config.json (" + type + "): " + path;
  if (type == "gpt2") {
    read_gpt2(reader, m);
  } else if (type == "gpt_neox") {
    read_gpt_neox(reader, m);
  } else {
    read_llama_family(reader, type, m);
  }
  read_sliding_window(doc, reader, type, m);
  if (type != "gpt2" && type != "gpt_neox") read_yarn(doc, reader, m);
  if (m.head_dim == 0 && m.heads > 0) {
    if (m.hidden % m.heads != 0) {
      reader.add_problem("num_attention_heads", "hidden size (" + std::to_string(m.hidden) +
                                                    ") is not a multiple of the head count (" +
                                                    std::to_string(m.heads) + ") and no head_dim is given");
    }
    m.head_dim = m.hidden / m.heads;
  }
  if (m.max_positions == 0) m.max_positions = m.seq_len;
  if (problems.empty()) problems.add_all(validate_model(m, path));
  problems.throw_if_any("trainsim reads the fields transformers documents for " + type +
                        "; docs/model-json.md shows how to describe any model directly");
  return m;
}

}  // namespace trainsim
