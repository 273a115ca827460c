// The MoE layers of a GPU stage, tp 1 (the CUDA twin of runtime/cpu/moe_layer.cpp with the shared
// experts of runtime/cpu/stage_moe.cpp), run by CudaStage in place of the dense MLP. Per layer and
// micro-batch: the router GEMM (bf16 in, fp32 logits); the logits copied to the host, which routes
// with the CPU runtime's own top-k + softmax and dispatch layout and exchanges the per-expert counts
// over the EP group (one wait for the compute stream per layer, as Megatron-Core's dropless
// dispatcher syncs its counts to the host); the copies gathered into expert order and dispatched
// (NCCL all-to-all); each local expert's FFN on its rows (one cuBLASLt GEMM per expert and
// projection, GELU or SwiGLU); the outputs combined back (all-to-all) and summed into their tokens
// with their router weights; the shared experts on every token, added. The backward reverses it,
// with the router weights' gradient, the backward of the softmax over the chosen logits and the
// router GEMM's gradients. Dropless, no auxiliary loss, no capacity factor, as the CPU runtime.
// The experts' rows are held in buffers sized for dropless routing's worst case (max_received_rows).
// Shapes: T tokens of a micro-batch, C = T x k copies, R rows received (R_max at most), E experts,
// h hidden, f = expert_ffn_hidden, u = f (GELU) or 2f (SwiGLU's [gate | up]); shared experts f_s =
// shared_experts x f wide, u_s likewise.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/gemm.cuh"
#include "model/model_spec.hpp"
#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/ep_collectives.hpp"
#include "runtime/cuda/event_clock.hpp"
#include "runtime/cuda/param_store.hpp"
#include "runtime/moe_routing.hpp"
#include "runtime/stage_layout.hpp"

namespace trainsim::cuda {

// One MoE layer's state of one micro-batch, kept from its forward to its backward (empty in a
// dense model's layers).
struct MoeActivations {
  runtime::DispatchLayout layout;   // host: this rank's copies (counts per EP rank)
  runtime::ExpertBatches batches;   // host: what it received (counts per source rank and local expert)
  DeviceBuffer<int32_t> token_of_row, row_of_slot, expert_of_slot;  // (C) the index maps of moe_index_maps.hpp
  DeviceBuffer<int32_t> received_row, expert_major_row;             // (R_max)
  DeviceBuffer<float> weight_of_slot, weight_of_row;                // (C)
  DeviceBuffer<__nv_bfloat16> combined;        // (C, h) the experts' outputs back at this rank, permuted order
  DeviceBuffer<__nv_bfloat16> expert_in;       // (R_max, h) received rows, expert-major
  DeviceBuffer<__nv_bfloat16> fc1, act;        // (R_max, u) and (R_max, f), expert-major
  DeviceBuffer<__nv_bfloat16> shared_fc1, shared_act;  // (T, u_s), (T, f_s)
};

class CudaMoe {
 public:
  // The stage's MoE layers (layout's local layers), their weights and gradients in `params`.
  CudaMoe(const ModelSpec& model, const runtime::StageLayout& layout, int64_t tokens, const ParamStore& params, DeviceArena& arena,
          Gemm& gemm, cudaStream_t stream);
  CudaMoe(const CudaMoe&) = delete;
  CudaMoe& operator=(const CudaMoe&) = delete;

  // The EP group (a group of one with ep 1); needed before the first forward.
  void set_group(EpCollectives& ep) { ep_ = &ep; }
  // Device memory for one layer's activations of one micro-batch.
  void allocate(MoeActivations& a);

  // Local layer `layer`; x: (T, h) the second norm's output. Returns the FFN's output (T, h), routed
  // plus shared experts, in a workspace valid until the next call. EP transfers are timed as `kind`.
  const __nv_bfloat16* forward(int64_t layer, const __nv_bfloat16* x, MoeActivations& a, SpanKind kind);
  // dy: (T, h) the output's gradient; returns x's gradient (T, h) in a workspace valid until the next
  // call, and accumulates the router's, the local experts' and the shared experts' gradients (the
  // experts' over the copies every rank of the EP group sent them).
  const __nv_bfloat16* backward(int64_t layer, const __nv_bfloat16* dy, const __nv_bfloat16* x, const MoeActivations& a,
                                SpanKind kind);

 private:
  struct Ffn {  // one FFN's weights and gradients; biases null where the model has none
    const __nv_bfloat16 *w_1 = nullptr, *b_1 = nullptr, *w_2 = nullptr, *b_2 = nullptr;
    float *dw_1 = nullptr, *db_1 = nullptr, *dw_2 = nullptr, *db_2 = nullptr;
  };
  struct Layer {
    const __nv_bfloat16* router = nullptr;  // (h, E)
    float* drouter = nullptr;
    std::vector<Ffn> experts;  // this EP rank's, local expert order
    Ffn shared;                // w_1 null without shared experts
  };
  static Ffn ffn_of(const ParamStore& params, const std::string& prefix);
  // The router, the host's routing and count exchange, and the index maps uploaded into `a`.
  void route(const Layer& w, const __nv_bfloat16* x, MoeActivations& a);
  // out (rows, h) = act(x W1 + b1) W2 + b2, keeping fc1 (rows, u) and act (rows, width) for the backward.
  void ffn_forward(const Ffn& p, int64_t width, const __nv_bfloat16* x, int64_t rows, __nv_bfloat16* fc1, __nv_bfloat16* act,
                   __nv_bfloat16* out);
  // Writes dx (rows, h); accumulates the FFN's gradients.
  void ffn_backward(const Ffn& p, int64_t width, const __nv_bfloat16* dout, const __nv_bfloat16* x, const __nv_bfloat16* fc1,
                    const __nv_bfloat16* act, int64_t rows, __nv_bfloat16* dx);
  void check_group() const;

  int64_t tokens_, hidden_, experts_, top_k_, local_, expert_width_, shared_width_, gates_, copies_, max_received_;
  bool swiglu_;
  DeviceArena& arena_;
  Gemm& gemm_;
  cudaStream_t stream_;
  EpCollectives* ep_ = nullptr;
  std::vector<Layer> layers_;  // by local layer
  std::vector<float> host_logits_;  // (T, E)
  // Workspaces shared by all micro-batches and layers (the compute stream runs one at a time).
  DeviceBuffer<float> logits_, dweight_;             // (T, E); (C) router weights' gradient
  DeviceBuffer<__nv_bfloat16> dlogits_;              // (T, E)
  DeviceBuffer<__nv_bfloat16> permuted_, returned_;  // (C, h): copies (or their gradients) leaving, and coming back
  DeviceBuffer<__nv_bfloat16> received_, processed_; // (R_max, h): rows arrived (source order), leaving again
  DeviceBuffer<__nv_bfloat16> major_, major_grad_;   // (R_max, h) expert-major: outputs (forward) or their gradients; input gradients
  DeviceBuffer<__nv_bfloat16> dact_, dfc1_;          // (max(R_max, T), max(f, f_s)), (.., max(u, u_s))
  DeviceBuffer<__nv_bfloat16> out_, dx_, shared_;    // (T, h): the layer's output, x's gradient, the shared experts' share
};

}  // namespace trainsim::cuda
