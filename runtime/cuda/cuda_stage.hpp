// One pipeline stage of the decoder on one TP rank, on the GPU: the CUDA twin of
// runtime/cpu/cpu_model.hpp (GPT-2- or Llama-style: learned positions or RoPE, pre-norm blocks with
// LayerNorm or RMSNorm, causal multi-head or grouped-query attention, a GELU or SwiGLU MLP, biases
// everywhere, on Q/K/V only or nowhere, final norm, LM head tied to the token embedding or its own,
// cross-entropy; Megatron column/row splits with TP all-reduces, or with sequence parallelism
// all-gather / reduce-scatter of token rows; the token embedding and LM head split by vocabulary,
// with Megatron's vocabulary-parallel lookup and cross-entropy: cuda_stage_vocab.cpp). bf16 weights
// and activations, fp32 gradients accumulated over micro-batches. Kernels and GEMMs come from
// kernels/cuda/. Everything is enqueued on one compute stream.
// Recomputation: full keeps only each layer's input and runs the layer's forward again before its
// backward. Attention is fused (flash: the softmax is always recomputed from Q, K, so selective and
// none store the same) or, with --attention unfused, the bmm + softmax path that keeps the s x s
// probabilities per layer (none) or recomputes them before the layer's backward (selective). Shapes: T tokens of a micro-batch, R = T (or T / tp with
// SP) rows outside the TP region, h hidden, a_l = heads x d / tp, q_l = (heads + 2 kv_heads) x d / tp
// (the fused [Q | K | V]), f_l = ffn / tp, u_l = f_l (GELU) or 2 f_l (SwiGLU's [gate | up]).
// An MoE model's FFNs are mixtures of experts (runtime/cuda/cuda_moe.hpp, tp 1), in place of the MLP.
// Context parallelism (cp > 1): every op runs on this CP rank's two chunks of each sequence (seq /
// cp rows; T = micro-batch x seq / cp), learned positions and RoPE at the rows' true positions, and
// the attention is the ring of runtime/cuda/cuda_ring_attention.hpp (set_cp_ring), as cpu_model.cpp.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/kernels.cuh"
#include "kernels/cuda/vocab_parallel.cuh"
#include "model/model_spec.hpp"
#include "runtime/cuda/cuda_moe.hpp"
#include "runtime/cuda/cuda_ring_attention.hpp"
#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/ep_collectives.hpp"
#include "runtime/cuda/param_store.hpp"
#include "runtime/cuda/tp_collectives.hpp"
#include "runtime/stage_layout.hpp"

namespace trainsim::cuda {

// One layer's activations of one micro-batch, kept for its backward.
struct LayerActivations {
  DeviceBuffer<bf16> ln1, ln1_full;         // (R, h); (T, h) gathered, SP only
  DeviceBuffer<float> ln1_mean, ln1_rstd;   // (R); no mean with RMSNorm
  DeviceBuffer<bf16> qkv;                   // (T, q_l) [Q | K | V] of this rank's heads
  DeviceBuffer<bf16> attn;                  // (T, a_l)
  DeviceBuffer<float> lse;                  // flash: (B * heads / tp * s) softmax log-sum-exp
  DeviceBuffer<bf16> probs;                 // unfused, recompute none: (B * heads / tp, s, s) probabilities
  DeviceBuffer<bf16> x_mid;                 // (R, h) residual after attention
  DeviceBuffer<bf16> ln2, ln2_full;         // (R, h); (T, h) SP only
  DeviceBuffer<float> ln2_mean, ln2_rstd;   // (R)
  DeviceBuffer<bf16> fc1, fc1_act;          // (T, u_l) before and (T, f_l) after GELU or SwiGLU
  MoeActivations moe;                       // MoE models: the experts' (cuda_moe.hpp), in place of fc1 and fc1_act
};

// Everything one micro-batch holds between its forward and its backward, reused once released.
struct ActivationSlot {
  ActivationSlot() = default;
  ~ActivationSlot();
  ActivationSlot(const ActivationSlot&) = delete;
  ActivationSlot& operator=(const ActivationSlot&) = delete;

  // One micro-batch's activations of one model chunk (the whole stage unless interleaved).
  int64_t chunk = 0;
  std::vector<DeviceBuffer<bf16>> x;      // chunk layers + 1 of (R, h): x[0] its input, x[i + 1] its layer i's output
  std::vector<LayerActivations> layers;   // per chunk layer; empty with full recomputation
  DeviceBuffer<bf16> xf, final_full;      // last stage: final norm (R, h); gathered (T, h) with SP
  DeviceBuffer<float> final_mean, final_rstd;  // (R)
  DeviceBuffer<bf16> dlogits;             // (T, vocab / tp): this TP rank's columns
  DeviceBuffer<bf16> grad_in, grad_out;   // (R, h) from the next stage, to the previous one
  const int32_t* tokens = nullptr;        // (T) on the device, this micro-batch's
  const int32_t* targets = nullptr;
  cudaEvent_t released = nullptr;         // compute stream: the backward is done with it
  cudaEvent_t sends_done = nullptr;       // send stream: its last pipeline send has left
  bool used = false;                      // the events have been recorded
  bool busy = false;
};

class CudaStage {
 public:
  // `shards`: DP ranks the parameters are padded for (ZeRO); `zero3_rank` >= 0: ZeRO-3, the store
  // keeps that rank's shard space (param_store.hpp).
  CudaStage(const ModelSpec& model, const runtime::StageLayout& layout, AttentionKernel attention, int64_t micro_batch, uint64_t seed,
            int64_t shards, DeviceArena& arena, TpCollectives& tp, Gemm& gemm, cudaStream_t stream, int64_t zero3_rank = -1);
  ~CudaStage();
  CudaStage(const CudaStage&) = delete;
  CudaStage& operator=(const CudaStage&) = delete;

  ParamStore& params() { return *params_; }
  const runtime::StageLayout& layout() const { return layout_; }
  int64_t tokens() const { return tokens_; }  // T
  int64_t rows() const { return rows_; }      // R
  int64_t hidden() const { return hidden_; }
  float* loss_sum() const { return loss_sum_.data(); }  // device: sum of -log p over the iteration

  // Allocates slots of model chunk `chunk` up to `count` (the schedule's micro-batches of it in
  // flight), so that running out of memory for them happens before the first iteration, where the
  // ranks can agree on it.
  void reserve_slots(int64_t chunk, int64_t count);
  ActivationSlot& acquire_slot(int64_t chunk);  // a free slot (a new one if none is, which reserve_slots avoids)
  void release_slot(ActivationSlot& slot);
  int64_t slots_allocated() const;
  int64_t chunks() const { return static_cast<int64_t>(layout_.chunks.size()); }

  // The slot's chunk. The first chunk of the first stage reads `slot.tokens`; others slot.x[0].
  // Output: slot.x.back() (the last chunk of the last stage adds the loss to loss_sum() and keeps
  // dlogits = loss_scale * (softmax - onehot)).
  void forward(ActivationSlot& slot, float loss_scale);
  // Input gradient: slot.grad_in (ignored where the loss is); output: slot.grad_out (not where the
  // embedding is). `after_layer(l)` (local layer) is called once layer l's gradients are enqueued.
  void backward(ActivationSlot& slot, const std::function<void(int64_t)>& after_layer);
  // After the iteration's last backward: with SP, sums over TP the gradients that cover only this
  // rank's tokens (layer norms, row-parallel biases, final norm).
  void finish_gradients();
  // The same for one layer (ZeRO-3: right after its backward, before its reduce-scatter), and for
  // the tensors outside the layers.
  void finish_layer_gradients(int64_t layer);
  void finish_outer_gradients();
  // ZeRO-3: called before layer l's forward (backward false) and before its backward and
  // recomputation (backward true), to make its weights present.
  void set_before_layer(std::function<void(int64_t layer, bool backward)> hook) { before_layer_ = std::move(hook); }
  // MoE models: the EP group the layers dispatch over (a group of one with ep 1), before the first forward.
  void set_expert_group(EpCollectives& ep);
  // The attention's shape on this rank (seq: its rows of each sequence, seq_len / cp).
  AttentionShape attention_shape() const { return {micro_batch_, seq_, heads_local_, kv_heads_local_, head_dim_}; }
  // The CP ring the attention runs over; needed (before the first forward) when layout().cp > 1.
  void set_cp_ring(CudaRingAttention* ring) { ring_ = ring; }

 private:
  // Biases and norm betas are null where the model has none.
  struct Weights {
    const bf16 *ln1_g, *ln1_b, *w_qkv, *b_qkv, *w_o, *b_o, *ln2_g, *ln2_b, *w_1, *b_1, *w_2, *b_2;
  };
  struct Grads {
    float *ln1_g, *ln1_b, *w_qkv, *b_qkv, *w_o, *b_o, *ln2_g, *ln2_b, *w_1, *b_1, *w_2, *b_2;
  };
  // LayerNorm or RMSNorm (mean unused), as the model has.
  void norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, float* mean, float* rstd);
  void norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* mean, const float* rstd, bf16* dx, float* dgamma,
                     float* dbeta);
  void bias_forward(bf16* y, const bf16* bias, int64_t rows, int64_t cols);   // nothing without a bias
  void bias_backward(const bf16* dy, float* dbias, int64_t rows, int64_t cols);
  void allocate_layer(LayerActivations& a);
  void finish_views(const std::function<bool(const ParamView&)>& which);
  std::unique_ptr<ActivationSlot> allocate_slot(int64_t chunk);
  bool embeds(int64_t chunk) const { return layout_.embedding && chunk == 0; }
  bool has_head(int64_t chunk) const { return layout_.head && chunk == chunks() - 1; }
  const bf16* enter_tp(const bf16* rows, bf16* full);
  bf16* leave_tp(bf16* partial, bf16* rows);
  void layer_forward(int64_t l, const bf16* x, LayerActivations& a, bf16* y);
  void layer_backward(int64_t l, const bf16* dy, const bf16* x, const LayerActivations& a, bf16* dx);
  // The dense MLP (or with moe_ the experts) from the second norm's output: its (R, h) output out
  // of the TP region; backward: the norm output's gradient (R, h), gradients accumulated.
  const bf16* mlp_forward(int64_t l, LayerActivations& a);
  const bf16* mlp_backward(int64_t l, const bf16* dy, const LayerActivations& a);
  void attention_forward(LayerActivations& a);
  void attention_backward(const LayerActivations& a);  // dattn_ -> dqkv_
  // The vocabulary ends (cuda_stage_vocab.cpp): the first chunk's embedding into slot.x[0] and its
  // backward from the (R, h) input gradient dy; the last chunk's head and loss, and its backward into dx.
  void allocate_vocab_workspaces();
  void embed_forward(ActivationSlot& s);
  void embed_backward(const ActivationSlot& s, const bf16* dy);
  void head_forward(ActivationSlot& s, float loss_scale);
  void vocab_parallel_loss(ActivationSlot& s, float loss_scale);
  void head_backward(ActivationSlot& s, bf16* dx);

  runtime::StageLayout layout_;
  // seq_: token rows of each sequence on this rank (seq_len / cp)
  int64_t micro_batch_, seq_, hidden_, heads_local_, kv_heads_local_, head_dim_, ffn_local_, tokens_, rows_;
  VocabShard vocab_;  // this TP rank's ids: rows of wte and lm_head, columns of the logits (all of them at tp 1)
  int64_t qkv_local_, fc1_local_;  // q_l, u_l
  bool sp_, rms_norm_, rope_, swiglu_, unfused_;
  double rope_theta_;
  std::string head_weight_;  // "wte" (tied) or "lm_head"
  DeviceArena& arena_;
  TpCollectives& tp_;
  Gemm& gemm_;
  cudaStream_t stream_;
  std::unique_ptr<ParamStore> params_;
  std::vector<Weights> w_;
  std::vector<Grads> g_;
  std::unique_ptr<CudaMoe> moe_;  // MoE models: every layer's FFN is a mixture of experts
  std::vector<std::vector<std::unique_ptr<ActivationSlot>>> slots_;  // per chunk
  DeviceBuffer<float> loss_sum_;
  // Workspaces shared by all micro-batches (the compute stream runs one step at a time).
  DeviceBuffer<bf16> embedded_, partial_, rows_tmp_, dfull_, d_act_, dfc1_, dx_ln_, dx_mid_, dattn_, dqkv_, logits_, dxf_full_;
  DeviceBuffer<bf16> grad_a_, grad_b_, recompute_out_;
  DeviceBuffer<float> row_max_, vocab_stats_;  // tp > 1, last stage: (T) and (T, 2) cross-entropy statistics
  DeviceBuffer<unsigned char> flash_scratch_;
  // Unfused attention: cuBLAS handle (strided batched GEMMs), scratch, and with selective
  // recomputation the probabilities and output of the one layer being recomputed.
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer<unsigned char> unfused_scratch_;
  DeviceBuffer<bf16> recomputed_probs_, recomputed_attn_;
  LayerActivations recompute_;  // full recomputation: the one layer whose activations exist
  std::function<void(int64_t, bool)> before_layer_;
  // cp > 1: the true position of each of a sequence's seq_ rows on this rank (device; empty
  // without CP: row r is position r % seq_), and the ring the attention runs over.
  DeviceBuffer<int32_t> positions_;
  CudaRingAttention* ring_ = nullptr;
};

}  // namespace trainsim::cuda
