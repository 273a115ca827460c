// CudaStage: forward and backward of one pipeline stage on the GPU; see cuda_stage.hpp. The
// comments give each step's CPU twin in runtime/cpu/cpu_model.cpp.
#include "runtime/cuda/cuda_stage.hpp"

#include "common/errors.hpp"
#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

namespace {
constexpr OutputType kBf16 = OutputType::kBf16;
constexpr OutputType kFp32 = OutputType::kFp32;
}  // namespace

ActivationSlot::~ActivationSlot() {
  if (released != nullptr) cudaEventDestroy(released);
  if (sends_done != nullptr) cudaEventDestroy(sends_done);
}

CudaStage::CudaStage(const ModelSpec& m, const runtime::StageLayout& layout, AttentionKernel attention, int64_t micro_batch, uint64_t seed,
                     int64_t shards, DeviceArena& arena, TpCollectives& tp, Gemm& gemm, cudaStream_t stream, int64_t zero3_rank)
    : layout_(layout), micro_batch_(micro_batch), seq_(m.seq_len / layout.cp), hidden_(m.hidden), heads_local_(m.heads / layout.tp),
      kv_heads_local_(m.kv_heads / layout.tp), head_dim_(m.head_dim), ffn_local_(m.ffn_hidden / layout.tp),
      tokens_(micro_batch * seq_),
      rows_(layout.sequence_parallel ? micro_batch * seq_ / layout.tp : micro_batch * seq_),
      vocab_{layout.tp_rank * (m.vocab / layout.tp), m.vocab / layout.tp, m.vocab},
      qkv_local_((m.heads + 2 * m.kv_heads) * m.head_dim / layout.tp),
      fc1_local_((m.ffn_kind == FfnKind::kSwiglu ? 2 : 1) * (m.ffn_hidden / layout.tp)), sp_(layout.sequence_parallel),
      rms_norm_(m.norm == NormKind::kRmsNorm), rope_(m.position == PositionKind::kRope), swiglu_(m.ffn_kind == FfnKind::kSwiglu),
      unfused_(attention == AttentionKernel::kUnfused), rope_theta_(m.rope_theta), head_weight_(m.tied_embeddings ? "wte" : "lm_head"),
      arena_(arena), tp_(tp), gemm_(gemm), stream_(stream),
      positions_(device_context_positions(m.seq_len, layout.cp, layout.cp_rank, arena)) {
  params_ = std::make_unique<ParamStore>(runtime::initial_stage_weights(m, layout, seed), layout, shards, arena, stream, zero3_rank);
  const ParamStore& p = *params_;
  for (const LayerRange& chunk : layout.chunks) {  // local layers: the chunks' layers in order
    for (int64_t l = chunk.first; l < chunk.last; ++l) {
      const std::string n = "layer" + std::to_string(l) + ".";
      auto wt = [&](const char* name) -> const bf16* { return p.weight_if_any(n + name); };
      auto gr = [&](const char* name) { return p.grad_if_any(n + name); };
      w_.push_back({wt("ln1_g"), wt("ln1_b"), wt("w_qkv"), wt("b_qkv"), wt("w_o"), wt("b_o"), wt("ln2_g"), wt("ln2_b"), wt("w_1"),
                    wt("b_1"), wt("w_2"), wt("b_2")});
      g_.push_back({gr("ln1_g"), gr("ln1_b"), gr("w_qkv"), gr("b_qkv"), gr("w_o"), gr("b_o"), gr("ln2_g"), gr("ln2_b"), gr("w_1"),
                    gr("b_1"), gr("w_2"), gr("b_2")});
    }
  }
  if (m.moe) moe_ = std::make_unique<CudaMoe>(m, layout, tokens_, p, arena, gemm, stream);  // before any activations
  slots_.resize(layout.chunks.size());
  loss_sum_ = DeviceBuffer<float>(arena, 1, "loss sum");
  check_cuda(cudaMemsetAsync(loss_sum_.data(), 0, sizeof(float), stream), "cudaMemsetAsync (loss sum)");
  const int64_t T = tokens_, R = rows_, h = hidden_, a = heads_local_ * head_dim_, f = ffn_local_;
  const bool layers = !w_.empty();
  if (sp_) {
    rows_tmp_ = DeviceBuffer<bf16>(arena, R * h, "SP row shard");
    dfull_ = DeviceBuffer<bf16>(arena, T * h, "SP gathered gradient");
  }
  if (layers) {
    partial_ = DeviceBuffer<bf16>(arena, T * h, "TP partial sums");
    if (!moe_) {
      d_act_ = DeviceBuffer<bf16>(arena, T * f, "MLP activation gradient");
      dfc1_ = DeviceBuffer<bf16>(arena, T * fc1_local_, "MLP FC1 gradient");
    }
    dx_ln_ = DeviceBuffer<bf16>(arena, R * h, "layer-norm input gradient");
    dx_mid_ = DeviceBuffer<bf16>(arena, R * h, "residual gradient");
    dattn_ = DeviceBuffer<bf16>(arena, T * a, "attention output gradient");
    dqkv_ = DeviceBuffer<bf16>(arena, T * qkv_local_, "QKV gradient");
    if (unfused_) {
      check_cublas(cublasCreate(&blas_), "cublasCreate (unfused attention)");
      unfused_scratch_ = DeviceBuffer<unsigned char>(arena, static_cast<int64_t>(unfused_attention_scratch_bytes(attention_shape())),
                                                     "unfused attention scratch");
      if (layout.recompute == Recompute::kSelective) {
        recomputed_probs_ = DeviceBuffer<bf16>(arena, micro_batch_ * heads_local_ * seq_ * seq_, "recomputed attention probabilities");
        recomputed_attn_ = DeviceBuffer<bf16>(arena, T * a, "recomputed attention output");
      }
    } else {
      flash_scratch_ = DeviceBuffer<unsigned char>(arena, static_cast<int64_t>(flash_attention_backward_scratch_bytes(attention_shape())),
                                                   "flash attention backward scratch");
    }
    if (layout.recompute == Recompute::kFull) {
      allocate_layer(recompute_);
      recompute_out_ = DeviceBuffer<bf16>(arena, R * h, "recomputed layer output");
    }
  }
  allocate_vocab_workspaces();
  grad_a_ = DeviceBuffer<bf16>(arena, R * h, "activation gradient (ping)");
  grad_b_ = DeviceBuffer<bf16>(arena, R * h, "activation gradient (pong)");
}

CudaStage::~CudaStage() {
  if (blas_ != nullptr) cublasDestroy(blas_);
}

void CudaStage::allocate_layer(LayerActivations& a) {
  const int64_t T = tokens_, R = rows_, h = hidden_, al = heads_local_ * head_dim_, f = ffn_local_;
  a.ln1 = DeviceBuffer<bf16>(arena_, R * h, "activations: ln1");
  if (!rms_norm_) a.ln1_mean = DeviceBuffer<float>(arena_, R, "activations: ln1 mean");
  a.ln1_rstd = DeviceBuffer<float>(arena_, R, "activations: ln1 rstd");
  a.qkv = DeviceBuffer<bf16>(arena_, T * qkv_local_, "activations: qkv");
  a.attn = DeviceBuffer<bf16>(arena_, T * al, "activations: attention output");
  if (!unfused_) {
    a.lse = DeviceBuffer<float>(arena_, micro_batch_ * heads_local_ * seq_, "activations: attention lse");
  } else if (layout_.recompute != Recompute::kSelective) {  // full: the one recomputed layer's
    a.probs = DeviceBuffer<bf16>(arena_, micro_batch_ * heads_local_ * seq_ * seq_, "activations: attention probabilities");
  }
  a.x_mid = DeviceBuffer<bf16>(arena_, R * h, "activations: residual");
  a.ln2 = DeviceBuffer<bf16>(arena_, R * h, "activations: ln2");
  if (!rms_norm_) a.ln2_mean = DeviceBuffer<float>(arena_, R, "activations: ln2 mean");
  a.ln2_rstd = DeviceBuffer<float>(arena_, R, "activations: ln2 rstd");
  if (moe_) {
    moe_->allocate(a.moe);
  } else {
    a.fc1 = DeviceBuffer<bf16>(arena_, T * fc1_local_, "activations: fc1");
    a.fc1_act = DeviceBuffer<bf16>(arena_, T * f, swiglu_ ? "activations: swiglu" : "activations: gelu");
  }
  if (sp_) {
    a.ln1_full = DeviceBuffer<bf16>(arena_, T * h, "activations: ln1 gathered");
    a.ln2_full = DeviceBuffer<bf16>(arena_, T * h, "activations: ln2 gathered");
  }
}

void CudaStage::reserve_slots(int64_t chunk, int64_t count) {
  auto& pool = slots_[static_cast<size_t>(chunk)];
  while (static_cast<int64_t>(pool.size()) < count) pool.push_back(allocate_slot(chunk));
}

int64_t CudaStage::slots_allocated() const {
  int64_t n = 0;
  for (const auto& pool : slots_) n += static_cast<int64_t>(pool.size());
  return n;
}

ActivationSlot& CudaStage::acquire_slot(int64_t chunk) {
  auto& pool = slots_[static_cast<size_t>(chunk)];
  for (auto& s : pool) {
    if (!s->busy) {
      s->busy = true;
      return *s;
    }
  }
  pool.push_back(allocate_slot(chunk));
  pool.back()->busy = true;
  return *pool.back();
}

std::unique_ptr<ActivationSlot> CudaStage::allocate_slot(int64_t chunk) {
  auto s = std::make_unique<ActivationSlot>();
  s->chunk = chunk;
  const int64_t T = tokens_, R = rows_, h = hidden_, layers = layout_.chunks[static_cast<size_t>(chunk)].size();
  for (int64_t i = 0; i <= layers; ++i) s->x.emplace_back(arena_, R * h, "activations: layer input");
  if (layout_.recompute != Recompute::kFull) {
    s->layers.resize(static_cast<size_t>(layers));
    for (LayerActivations& a : s->layers) allocate_layer(a);
  }
  if (has_head(chunk)) {
    s->xf = DeviceBuffer<bf16>(arena_, R * h, "activations: final norm");
    if (sp_) s->final_full = DeviceBuffer<bf16>(arena_, T * h, "activations: final norm gathered");
    if (!rms_norm_) s->final_mean = DeviceBuffer<float>(arena_, R, "activations: final norm mean");
    s->final_rstd = DeviceBuffer<float>(arena_, R, "activations: final norm rstd");
    s->dlogits = DeviceBuffer<bf16>(arena_, T * vocab_.count, "logit gradients");
  } else {
    s->grad_in = DeviceBuffer<bf16>(arena_, R * h, "pipeline: gradient from the next stage");
  }
  if (!embeds(chunk)) s->grad_out = DeviceBuffer<bf16>(arena_, R * h, "pipeline: gradient to the previous stage");
  check_cuda(cudaEventCreateWithFlags(&s->released, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&s->sends_done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return s;
}

void CudaStage::release_slot(ActivationSlot& slot) { slot.busy = false; }

void CudaStage::set_expert_group(EpCollectives& ep) {
  if (moe_) moe_->set_group(ep);
}

// cpu_model.cpp enter_tp_region / leave_tp_region.
const bf16* CudaStage::enter_tp(const bf16* rows, bf16* full) {
  if (!sp_) return rows;
  tp_.all_gather_rows(rows, full, rows_ * hidden_);
  return full;
}

bf16* CudaStage::leave_tp(bf16* partial, bf16* rows) {
  if (!sp_) {
    tp_.all_reduce(partial, tokens_ * hidden_);
    return partial;
  }
  tp_.reduce_scatter_rows(partial, rows, rows_ * hidden_);
  return rows;
}

void CudaStage::norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, float* mean, float* rstd) {
  if (rms_norm_) {
    rms_norm_forward(x, gamma, y, rstd, rows_, hidden_, stream_);
  } else {
    layer_norm_forward(x, gamma, beta, y, mean, rstd, rows_, hidden_, stream_);
  }
}

void CudaStage::norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* mean, const float* rstd, bf16* dx,
                              float* dgamma, float* dbeta) {
  if (rms_norm_) {
    rms_norm_backward(dy, x, gamma, rstd, dx, dgamma, rows_, hidden_, stream_);
  } else {
    layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows_, hidden_, stream_);
  }
}

void CudaStage::bias_forward(bf16* y, const bf16* bias, int64_t rows, int64_t cols) {
  if (bias != nullptr) add_bias(y, bias, rows, cols, stream_);
}

void CudaStage::bias_backward(const bf16* dy, float* dbias, int64_t rows, int64_t cols) {
  if (dbias != nullptr) bias_grad(dy, dbias, rows, cols, stream_);
}

// cpu_model.cpp StageModel::layer_forward.
void CudaStage::layer_forward(int64_t l, const bf16* x, LayerActivations& a, bf16* y) {
  const Weights& w = w_[static_cast<size_t>(l)];
  const int64_t T = tokens_, R = rows_, h = hidden_, al = heads_local_ * head_dim_, q = qkv_local_;
  norm_forward(x, w.ln1_g, w.ln1_b, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data());
  const bf16* ln1 = enter_tp(a.ln1.data(), a.ln1_full.data());
  gemm_.matmul(ln1, false, w.w_qkv, false, a.qkv.data(), kBf16, T, q, h, 1.0f, 0.0f, stream_);
  bias_forward(a.qkv.data(), w.b_qkv, T, q);
  if (rope_) {
    rotary_embedding_at(a.qkv.data(), positions_.data(), T, seq_, heads_local_, kv_heads_local_, head_dim_, rope_theta_, false, stream_);
  }
  attention_forward(a);
  gemm_.matmul(a.attn.data(), false, w.w_o, false, partial_.data(), kBf16, T, h, al, 1.0f, 0.0f, stream_);
  bf16* o = leave_tp(partial_.data(), rows_tmp_.data());
  bias_forward(o, w.b_o, R, h);
  add(x, o, a.x_mid.data(), R * h, stream_);
  norm_forward(a.x_mid.data(), w.ln2_g, w.ln2_b, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data());
  add(a.x_mid.data(), mlp_forward(l, a), y, R * h, stream_);
}

// cpu_model.cpp StageModel::mlp_forward (or moe_mlp_forward).
const bf16* CudaStage::mlp_forward(int64_t l, LayerActivations& a) {
  if (moe_) return moe_->forward(l, a.ln2.data(), a.moe, tp_.kind());  // tp 1: the norm's rows are the tokens
  const Weights& w = w_[static_cast<size_t>(l)];
  const int64_t T = tokens_, R = rows_, h = hidden_, f = ffn_local_, u = fc1_local_;
  const bf16* ln2 = enter_tp(a.ln2.data(), a.ln2_full.data());
  gemm_.matmul(ln2, false, w.w_1, false, a.fc1.data(), kBf16, T, u, h, 1.0f, 0.0f, stream_);
  bias_forward(a.fc1.data(), w.b_1, T, u);
  if (swiglu_) {
    swiglu_forward(a.fc1.data(), a.fc1_act.data(), T, f, stream_);
  } else {
    gelu_forward(a.fc1.data(), a.fc1_act.data(), T * f, stream_);
  }
  gemm_.matmul(a.fc1_act.data(), false, w.w_2, false, partial_.data(), kBf16, T, h, f, 1.0f, 0.0f, stream_);
  bf16* mlp = leave_tp(partial_.data(), rows_tmp_.data());
  bias_forward(mlp, w.b_2, R, h);
  return mlp;
}

// cpu_model.cpp StageModel::layer_backward. dy, x: (R, h); writes dx (R, h), accumulates the grads.
void CudaStage::layer_backward(int64_t l, const bf16* dy, const bf16* x, const LayerActivations& a, bf16* dx) {
  const Weights& w = w_[static_cast<size_t>(l)];
  const Grads& g = g_[static_cast<size_t>(l)];
  const int64_t T = tokens_, R = rows_, h = hidden_, al = heads_local_ * head_dim_, q = qkv_local_;
  const bf16* dln2 = mlp_backward(l, dy, a);  // MLP: y = x_mid + reduce(act(fc1) W2) + b2
  norm_backward(dln2, a.x_mid.data(), w.ln2_g, a.ln2_mean.data(), a.ln2_rstd.data(), dx_ln_.data(), g.ln2_g, g.ln2_b);
  add(dy, dx_ln_.data(), dx_mid_.data(), R * h, stream_);
  // Attention: x_mid = x + reduce(attn W_o) + b_o
  bias_backward(dx_mid_.data(), g.b_o, R, h);
  const bf16* dout = enter_tp(dx_mid_.data(), dfull_.data());
  gemm_.matmul(a.attn.data(), true, dout, false, g.w_o, kFp32, al, h, T, 1.0f, 1.0f, stream_);     // dWo += attn^T dout
  gemm_.matmul(dout, false, w.w_o, true, dattn_.data(), kBf16, T, al, h, 1.0f, 0.0f, stream_);
  attention_backward(a);
  if (rope_) {
    rotary_embedding_at(dqkv_.data(), positions_.data(), T, seq_, heads_local_, kv_heads_local_, head_dim_, rope_theta_, true, stream_);
  }
  const bf16* ln1 = sp_ ? a.ln1_full.data() : a.ln1.data();
  gemm_.matmul(ln1, true, dqkv_.data(), false, g.w_qkv, kFp32, h, q, T, 1.0f, 1.0f, stream_);
  bias_backward(dqkv_.data(), g.b_qkv, T, q);
  gemm_.matmul(dqkv_.data(), false, w.w_qkv, true, partial_.data(), kBf16, T, h, q, 1.0f, 0.0f, stream_);
  const bf16* dln1 = leave_tp(partial_.data(), rows_tmp_.data());
  norm_backward(dln1, x, w.ln1_g, a.ln1_mean.data(), a.ln1_rstd.data(), dx_ln_.data(), g.ln1_g, g.ln1_b);
  add(dx_mid_.data(), dx_ln_.data(), dx, R * h, stream_);
}

// cpu_model.cpp StageModel::mlp_backward (or moe_mlp_backward). dy: (R, h).
const bf16* CudaStage::mlp_backward(int64_t l, const bf16* dy, const LayerActivations& a) {
  if (moe_) return moe_->backward(l, dy, a.ln2.data(), a.moe, tp_.kind());
  const Weights& w = w_[static_cast<size_t>(l)];
  const Grads& g = g_[static_cast<size_t>(l)];
  const int64_t T = tokens_, R = rows_, h = hidden_, f = ffn_local_, u = fc1_local_;
  bias_backward(dy, g.b_2, R, h);
  const bf16* dm = enter_tp(dy, dfull_.data());                                                     // (T, h)
  gemm_.matmul(a.fc1_act.data(), true, dm, false, g.w_2, kFp32, f, h, T, 1.0f, 1.0f, stream_);     // dW2 += act^T dm
  gemm_.matmul(dm, false, w.w_2, true, d_act_.data(), kBf16, T, f, h, 1.0f, 0.0f, stream_);        // dm W2^T
  if (swiglu_) {
    swiglu_backward(d_act_.data(), a.fc1.data(), dfc1_.data(), T, f, stream_);
  } else {
    gelu_backward(d_act_.data(), a.fc1.data(), dfc1_.data(), T * f, stream_);
  }
  const bf16* ln2 = sp_ ? a.ln2_full.data() : a.ln2.data();
  gemm_.matmul(ln2, true, dfc1_.data(), false, g.w_1, kFp32, h, u, T, 1.0f, 1.0f, stream_);        // dW1 += ln2^T dfc1
  bias_backward(dfc1_.data(), g.b_1, T, u);
  gemm_.matmul(dfc1_.data(), false, w.w_1, true, partial_.data(), kBf16, T, h, u, 1.0f, 0.0f, stream_);
  return leave_tp(partial_.data(), rows_tmp_.data());
}

void CudaStage::attention_forward(LayerActivations& a) {
  if (layout_.cp > 1) {  // cpu_model.cpp StageModel::attention: the ring over this rank's chunks
    TRAINSIM_ASSERT(ring_ != nullptr, "a context-parallel stage needs its CP ring (set_cp_ring)");
    ring_->forward(a.qkv.data(), a.attn.data(), a.lse.data(), tp_.kind());
  } else if (!unfused_) {
    flash_attention_forward(a.qkv.data(), a.attn.data(), a.lse.data(), attention_shape(), stream_);
  } else if (a.probs.data() != nullptr) {
    unfused_attention_forward(blas_, a.qkv.data(), a.attn.data(), a.probs.data(), unfused_scratch_.data(), attention_shape(), stream_);
  } else {  // selective: the probabilities are not kept (recomputed before the backward)
    unfused_attention_forward(blas_, a.qkv.data(), a.attn.data(), recomputed_probs_.data(), unfused_scratch_.data(), attention_shape(),
                              stream_);
  }
}

void CudaStage::attention_backward(const LayerActivations& a) {
  if (layout_.cp > 1) {
    ring_->backward(dattn_.data(), a.qkv.data(), a.attn.data(), a.lse.data(), dqkv_.data(), tp_.kind());
    return;
  }
  if (!unfused_) {
    flash_attention_backward(dattn_.data(), a.qkv.data(), a.attn.data(), a.lse.data(), dqkv_.data(), flash_scratch_.data(),
                             attention_shape(), stream_);
    return;
  }
  const bf16* probs = a.probs.data();
  if (probs == nullptr) {  // selective recomputation: the softmax again from Q and K (cpu_model.cpp's)
    unfused_attention_forward(blas_, a.qkv.data(), recomputed_attn_.data(), recomputed_probs_.data(), unfused_scratch_.data(),
                              attention_shape(), stream_);
    probs = recomputed_probs_.data();
  }
  unfused_attention_backward(blas_, dattn_.data(), a.qkv.data(), probs, dqkv_.data(), unfused_scratch_.data(), attention_shape(),
                             stream_);
}

void CudaStage::forward(ActivationSlot& s, float loss_scale) {
  tp_.set_kind(SpanKind::kTpInForward);
  const int64_t first = layout_.first_local_layer(s.chunk), layers = layout_.chunks[static_cast<size_t>(s.chunk)].size();
  if (embeds(s.chunk)) embed_forward(s);
  for (int64_t i = 0; i < layers; ++i) {  // chunk layer i is local layer first + i
    const size_t k = static_cast<size_t>(i);
    LayerActivations& a = layout_.recompute == Recompute::kFull ? recompute_ : s.layers[k];
    if (before_layer_) before_layer_(first + i, false);
    layer_forward(first + i, s.x[k].data(), a, s.x[k + 1].data());
  }
  if (has_head(s.chunk)) head_forward(s, loss_scale);
}

void CudaStage::backward(ActivationSlot& s, const std::function<void(int64_t)>& after_layer) {
  tp_.set_kind(SpanKind::kTpInBackward);
  const int64_t R = rows_, h = hidden_;
  const int64_t first = layout_.first_local_layer(s.chunk), layers = layout_.chunks[static_cast<size_t>(s.chunk)].size();
  const bf16* dy = s.grad_in.data();
  if (has_head(s.chunk)) {
    head_backward(s, grad_a_.data());
    dy = grad_a_.data();
  }
  for (int64_t i = layers; i-- > 0;) {
    const size_t k = static_cast<size_t>(i);
    const int64_t l = first + i;
    const bool full = layout_.recompute == Recompute::kFull;
    if (before_layer_) before_layer_(l, true);
    if (full) layer_forward(l, s.x[k].data(), recompute_, recompute_out_.data());
    bf16* dx = i == 0 && !embeds(s.chunk) ? s.grad_out.data() : (dy == grad_a_.data() ? grad_b_.data() : grad_a_.data());
    layer_backward(l, dy, s.x[k].data(), full ? recompute_ : s.layers[k], dx);
    if (after_layer) after_layer(l);
    dy = dx;
  }
  if (embeds(s.chunk)) {
    embed_backward(s, dy);
  } else if (layers == 0) {
    check_cuda(cudaMemcpyAsync(s.grad_out.data(), dy, static_cast<size_t>(R * h) * sizeof(bf16), cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync (stage without layers)");
  }
}

void CudaStage::finish_views(const std::function<bool(const ParamView&)>& which) {
  if (!sp_) return;
  std::vector<TpCollectives::Fp32Range> ranges;
  for (const ParamView& v : params_->views()) {
    if (v.sp_partial && which(v)) ranges.push_back({params_->grad_of(v), v.count()});
  }
  const SpanKind previous = tp_.kind();
  tp_.set_kind(SpanKind::kTpOther);
  tp_.all_reduce_fp32(ranges);
  tp_.set_kind(previous);
}

void CudaStage::finish_gradients() {
  finish_views([](const ParamView&) { return true; });
}

void CudaStage::finish_layer_gradients(int64_t layer) {
  finish_views([layer](const ParamView& v) { return v.layer == layer; });
}

void CudaStage::finish_outer_gradients() {
  finish_views([](const ParamView& v) { return v.layer < 0; });
}

}  // namespace trainsim::cuda
