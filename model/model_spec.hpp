// ModelSpec: the architecture of a decoder-only transformer (GPT- and Llama-style, optional MoE),
// as typed, validated data. Loaders (model_json, hf_config, model_catalog) produce it; the
// model math (param_count, flops, memory_model) consumes it. No file I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/problem_list.hpp"

namespace trainsim {

enum class FfnKind { kGelu, kSwiglu };          // 2 matrices (up, down) or 3 (gate, up, down)
enum class NormKind { kLayerNorm, kRmsNorm };  // LayerNorm has weight + bias, RMSNorm weight only
enum class PositionKind { kLearned, kRope, kAlibi };

struct MoeSpec {
  int64_t experts = 0;            // experts per MoE layer
  int64_t top_k = 0;              // experts each token is routed to
  int64_t expert_ffn_hidden = 0;  // FFN width of one expert
  int64_t shared_experts = 0;     // experts every token also passes through (DeepSeek, Qwen2-MoE)
  // The first `dense_layers` layers have a dense FFN of the model's ffn_hidden instead (DeepSeek-V3:
  // 3, HF first_k_dense_replace). Counted exactly in parameters and FLOPs; the lowering and the
  // rank memory price them as dense layers, their activations as an MoE layer's (docs/model-math.md
  // "Dense first layers").
  int64_t dense_layers = 0;
};

// Multi-head latent attention (DeepSeek-V2/V3; Megatron-Core's MLASelfAttention): Q through a
// low-rank bottleneck (h -> q_lora_rank -> heads x (nope + rope)), K and V from one shared latent
// (h -> kv_lora_rank + rope; kv_lora_rank -> heads x (nope + v)), RMSNorms on both latents, and a
// rope-wide key part shared by every head. QK heads are nope + rope wide, V heads v wide; the
// output projection maps heads x v -> h. Field names as in Hugging Face's DeepseekV3Config.
struct MlaSpec {
  int64_t q_lora_rank = 0;       // 0: Q projected directly from h (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;      // the compressed K/V latent
  int64_t qk_nope_head_dim = 0;  // per-head Q/K width without rotary embedding
  int64_t qk_rope_head_dim = 0;  // per-head Q width (and the shared K part) with rotary embedding
  int64_t v_head_dim = 0;        // per-head V width (== ModelSpec::head_dim)
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

struct ModelSpec {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;      // model width h
  int64_t heads = 0;       // query heads a
  int64_t kv_heads = 0;    // key/value heads (== heads: MHA; 1: MQA; else GQA)
  int64_t head_dim = 0;    // usually hidden / heads (GPT-3 13B is an exception: 5140 vs 40*128)
  int64_t ffn_hidden = 0;  // dense FFN width f
  FfnKind ffn_kind = FfnKind::kGelu;
  int64_t vocab = 0;
  int64_t seq_len = 0;        // training sequence length s
  int64_t max_positions = 0;  // rows of a learned position table (>= seq_len)
  NormKind norm = NormKind::kLayerNorm;
  PositionKind position = PositionKind::kLearned;
  double rope_theta = 10000.0;  // RoPE base (Llama 2: 10^4, Llama 3: 5 x 10^5); the runtime's numerics only
  // YaRN's attention (concentration) factor, multiplying RoPE's cos and sin: 0.1 ln(factor) + 1
  // unless the config states it (GPT-OSS's factor 32: 1.3466). Not 1: Megatron-Core applies RoPE
  // unfused (plan/rope_lowering.cpp). 1: plain RoPE, or a YaRN without it.
  double rope_attention_factor = 1.0;
  bool tied_embeddings = true;  // LM head shares the token embedding matrix
  bool linear_bias = true;      // every linear layer has a bias (GPT-2/3, Megatron GPT)
  bool qkv_bias = false;        // only Q, K, V have biases (Qwen2); implied by linear_bias
  bool dropout = true;          // dropout after attention and MLP (stores 1-byte masks)
  std::optional<MoeSpec> moe;   // every layer's FFN is a mixture of experts when set
  std::optional<MlaSpec> mla;   // multi-head latent attention instead of Q, K, V projections; then
                                // kv_heads == heads and head_dim == mla->v_head_dim
  // Sliding-window (local) attention: a query attends to the last `sliding_window` positions
  // (itself included) in `sliding_window_layers` of the layers, the others see the whole causal
  // prefix (Mistral: every layer; Gemma 2, GPT-OSS: every other layer). 0: no window.
  int64_t sliding_window = 0;
  int64_t sliding_window_layers = 0;
  // A clamped GLU (GPT-OSS: swiglu_limit 7, Megatron-Core activation_func_clamp_value): the gate
  // half clamped to at most this, the linear half to [-this, this], before the activation. The
  // same math as an unclamped GLU; what it costs depends on the framework's kernels (the experts'
  // eager clamp in Megatron-Core, plan/moe_lowering.cpp). 0: none.
  double glu_clamp = 0;
  // Multi-token prediction (DeepSeek-V3 num_nextn_predict_layers; Megatron-Core --mtp-num-layers):
  // after the last layer, each MTP depth k normalizes the hidden state and the embedding of the
  // tokens k ahead (hnorm, enorm), projects their concatenation 2h -> h (eh_proj), runs one more
  // transformer layer (an MoE one in an MoE model), its own final norm, the shared LM head and a
  // second loss. It runs on the pipeline's last stage (Megatron-Core's post-process stage) and
  // shares the embedding and LM head with the model. Its parameters are not in the model's stated
  // count (DeepSeek-V3's 671B leaves its 14B MTP module out).
  int64_t mtp_layers = 0;
  std::optional<double> params_b_stated;  // a parameter count the source stated, for reference
  std::string source;                     // where the architecture comes from

  int64_t attention_width() const { return heads * head_dim; }  // width of Q and of the output proj (MLA: of V)
  int64_t kv_width() const { return kv_heads * head_dim; }
  // Width of the QK^T heads: head_dim, or MLA's nope + rope (192 for DeepSeek-V3).
  int64_t qk_head_dim() const { return mla ? mla->qk_head_dim() : head_dim; }
  // Layers whose FFN is a mixture of experts (the others dense).
  int64_t moe_layers() const { return moe ? layers - moe->dense_layers : 0; }
  bool is_moe() const { return moe.has_value(); }
  // Layers whose attention is windowed (0 without a window, or when the window covers the sequence).
  int64_t windowed_layers() const { return sliding_window > 0 && sliding_window < seq_len ? sliding_window_layers : 0; }
  // FFN passes per token: 1, or an MoE layer's top-k routed experts plus its shared experts.
  int64_t ffn_passes() const { return moe ? moe->top_k + moe->shared_experts : 1; }
};

// Every violated constraint of the spec, each naming `where` (file or catalog entry) and key.
ProblemList validate_model(const ModelSpec& model, const std::string& where);

const char* to_string(FfnKind kind);
const char* to_string(NormKind kind);
const char* to_string(PositionKind kind);

}  // namespace trainsim
