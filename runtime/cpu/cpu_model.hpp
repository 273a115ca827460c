// One pipeline stage of a decoder on one tensor-parallel rank (CPU, fp32), GPT-2- or Llama-style:
// learned positions or RoPE, pre-norm blocks (LayerNorm or RMSNorm) with causal multi-head (or
// grouped-query) attention and a GELU (or SwiGLU) MLP, linear biases (all, Q/K/V only, or none),
// final norm, LM head tied to the token embedding or its own, cross-entropy. Megatron splits: QKV and FC1 by columns, the
// attention output and FC2 by rows, with the TP all-reduces (or, with sequence parallelism, the
// all-gather / reduce-scatter of token rows); the token embedding and LM head by vocabulary rows
// (each TP rank looks up and scores its ids, the embedding output is all-reduced or
// reduce-scattered, the cross-entropy reduces row max, sum of exp and target logit over TP).
// With context parallelism (cp > 1) every op runs on this CP rank's two load-balanced chunks of
// each sequence (runtime/cpu/ring_attention.hpp) at their true positions, and the attention is the
// ring over the CP group. With an MoE model every layer's FFN is the mixture of experts of
// runtime/cpu/moe_layer.hpp: this rank holds experts / ep of the experts (ep > 1: expert parallelism,
// the copies dispatched over the EP group, each TP rank routing its SP rows), split over TP like a
// dense FFN when ep is 1; the router is replicated, the shared experts split over TP
// (runtime/cpu/stage_moe.cpp).
// Parameters are initialised from full tensors drawn with the seed, then sliced (or, for experts,
// each drawn by its global id), so every layout starts from the same model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "model/activation_memory.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/cpu/cp_group.hpp"
#include "runtime/cpu/ep_group.hpp"
#include "runtime/cpu/moe_layer.hpp"
#include "runtime/cpu/ring_attention.hpp"
#include "runtime/cpu/tp_group.hpp"
#include "runtime/param.hpp"
#include "runtime/stage_layout.hpp"
#include "runtime/stage_weights.hpp"

namespace trainsim::cpu {

// Per micro-batch activations kept for the backward.
struct LayerCache {
  Matrix x_in, ln1_out, qkv, attn_out, x_mid, ln2_out, fc1_out, fc1_act;
  LayerNormCache ln1, ln2;
  AttentionCache attention;
  RingAttentionCache ring;  // cp > 1
  MoeCache moe;             // MoE models (fc1_out, fc1_act stay empty)
  FfnCache shared;          // MoE shared experts (`in`: their gathered input when routes_own_rows())
};

struct MicroBatchState {
  int64_t batch = 0;  // sequences
  std::vector<int32_t> tokens, targets;  // this CP rank's seq / cp of each sequence (all of it without CP)
  std::vector<LayerCache> layers;  // by local layer; a chunk's entries are emptied after its backward
  Matrix final_in, final_out;
  LayerNormCache final_ln;
  Matrix dlogits;
};

// What the trainer does around each layer's use: ZeRO-3 gathers a layer's weights before and
// releases them after; data parallelism starts a gradient bucket's reduction as soon as the
// layers in it have finished their last backward. `layer` is the stage's local index.
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  virtual void before_layer(int64_t layer, bool backward) = 0;
  virtual void after_layer_forward(int64_t layer) = 0;
  virtual void after_layer_backward(int64_t layer) = 0;
};

class StageModel {
 public:
  StageModel(const ModelSpec& model, const runtime::StageLayout& layout, uint64_t seed);

  // Forward of one micro-batch through model chunk `chunk`. The first chunk of the first stage
  // starts from `state.tokens`; others from `input` (token rows, this rank's shard with SP). The
  // last chunk of the last stage returns an empty matrix and `loss_sum` gets the summed token loss;
  // `loss_scale` normalises the gradient (1 / tokens in the global batch).
  Matrix forward(const Matrix& input, MicroBatchState& state, TpGroup& tp, float loss_scale, double& loss_sum, int64_t chunk = 0);
  // Backward of chunk `chunk`; `grad_output` is ignored where the loss is. Returns the gradient of
  // the input activation (empty where the embedding is). Gradients accumulate into the parameters.
  Matrix backward(const Matrix& grad_output, MicroBatchState& state, TpGroup& tp, int64_t chunk = 0);
  // With SP, sums over the TP group the gradients of a layer that cover only this rank's tokens
  // (call once its gradients are complete for the iteration, or per micro-batch: the sum is linear).
  void finish_layer_gradients(int64_t layer, TpGroup& tp);
  // After the last backward of an iteration: the parameters outside the layers (embeddings, final
  // norm): adds the token-embedding share to the tied weight and, with SP, sums over TP as above.
  void finish_outer_gradients(TpGroup& tp);
  // Both, for every layer.
  void finish_gradients(TpGroup& tp);

  // Parameter indices of each local layer, and of the rest (embeddings, final norm).
  std::vector<size_t> layer_params(int64_t layer) const;
  std::vector<size_t> outer_params() const;
  int64_t layer_count() const { return static_cast<int64_t>(layers_.size()); }
  int64_t chunk_count() const { return static_cast<int64_t>(layout_.chunks.size()); }
  void set_hooks(LayerHooks* hooks) { hooks_ = hooks; }
  // The CP ring the attention runs over; needed (before the first forward) when layout().cp > 1.
  void set_cp_group(CpGroup* cp) { cp_ = cp; }
  // The EP group the MoE layers dispatch over; needed (before the first forward) when layout().ep > 1.
  void set_ep_group(EpGroup* ep) { ep_ = ep; }

  std::vector<runtime::Param>& params() { return params_; }
  const runtime::StageLayout& layout() const { return layout_; }
  int64_t hidden() const { return hidden_; }
  int64_t seq() const { return seq_; }
  int64_t seq_local() const { return seq_local_; }  // token rows of each sequence on this CP rank

 private:
  static constexpr size_t kNone = runtime::kNoParam;  // a parameter the model does not have
  using LayerParams = runtime::LayerWeights;
  Matrix norm(const Matrix& x, size_t gamma, size_t beta, LayerNormCache& cache);
  Matrix norm_backward(const Matrix& dy, size_t gamma, size_t beta, const LayerNormCache& cache);
  Matrix linear(const Matrix& x, size_t weight, size_t bias);
  void add_bias_grad(const Matrix& dy, size_t bias);
  const Matrix* bias_or_null(size_t bias);
  Matrix& v(size_t i) { return params_[i].value; }
  Matrix& g(size_t i) { return params_[i].grad; }
  Matrix layer_forward(const LayerParams& p, const Matrix& x, LayerCache& c, int64_t batch, TpGroup& tp);
  Matrix layer_backward(const LayerParams& p, const Matrix& dy, const LayerCache& c, int64_t batch, TpGroup& tp);
  Matrix mlp_forward(const LayerParams& p, LayerCache& c, TpGroup& tp);                     // from ln2_out; before the residual
  Matrix mlp_backward(const LayerParams& p, const Matrix& dy, const LayerCache& c, TpGroup& tp);  // to ln2_out's gradient
  // MoE (runtime/cpu/stage_moe.cpp): the layer's router and experts, their view for moe_layer, and
  // the FFN over TP. routes_own_rows(): ep > 1 with tp > 1, each TP rank routing its SP rows (the
  // second norm's output is then not gathered); otherwise the experts are one TP region.
  bool routes_own_rows() const;
  MoeParams moe_params(const LayerParams& p);
  FfnParams ffn_params(const size_t* ids);  // ids: w_1, b_1, w_2, b_2 (kNone where the model has none)
  Matrix moe_mlp_forward(const LayerParams& p, LayerCache& c, TpGroup& tp);
  Matrix moe_mlp_backward(const LayerParams& p, const Matrix& dy, const LayerCache& c, TpGroup& tp);
  EpGroup& experts_group() { return ep_ != nullptr ? *ep_ : single_ep_; }
  Matrix attention(const Matrix& qkv, int64_t batch, LayerCache& c);
  Matrix attention_backward(const Matrix& dout, int64_t batch, const LayerCache& c);

  runtime::StageLayout layout_;
  int64_t hidden_, heads_local_, kv_heads_local_, head_dim_, ffn_local_, seq_, seq_local_;
  std::vector<int32_t> positions_;  // the true position of each of a sequence's seq_local_ rows
  int64_t vocab_local_, vocab_first_;  // this TP rank's rows of the token embedding and LM head
  bool swiglu_ = false, rms_norm_ = false, rope_ = false;
  MoeShape moe_shape_;  // experts 0: a dense model
  double rope_theta_ = 10000.0;
  RotaryTables rotary_;  // RoPE's cosines and sines of positions_, computed once
  std::vector<runtime::Param> params_;
  std::vector<LayerParams> layers_;
  size_t wte_ = kNone, wpe_ = kNone, lnf_g_ = kNone, lnf_b_ = kNone;
  size_t head_ = kNone;  // the LM head's weight (vocab, h): wte when tied
  Matrix embedding_grad_;  // (vocab_local, h): the embedding lookup's share of the tied weight's gradient
  Matrix embed(const MicroBatchState& s, TpGroup& tp);
  void embed_backward(const Matrix& dx, const MicroBatchState& s, TpGroup& tp);
  double head_loss(MicroBatchState& s, const Matrix& logits, float loss_scale, TpGroup& tp);
  LayerHooks* hooks_ = nullptr;
  CpGroup* cp_ = nullptr;
  EpGroup* ep_ = nullptr;
  SingleRankExperts single_ep_;  // ep 1: the rank holds every expert
  SingleRankGroup whole_experts_;  // expert TP 1 (ep > 1): no expert is split
};

}  // namespace trainsim::cpu
