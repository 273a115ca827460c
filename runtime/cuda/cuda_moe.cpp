// CudaMoe: the MoE layers' forward and backward on the GPU; see cuda_moe.hpp. The comments give each
// step's CPU twin in runtime/cpu/moe_layer.cpp (moe_forward, moe_backward, ffn_forward, ffn_backward).
#include "runtime/cuda/cuda_moe.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kernels.cuh"
#include "kernels/cuda/moe.cuh"
#include "runtime/cuda/moe_index_maps.hpp"

namespace trainsim::cuda {

namespace {

constexpr OutputType kBf16 = OutputType::kBf16;
constexpr OutputType kFp32 = OutputType::kFp32;

template <typename T>
void upload(const std::vector<T>& host, const DeviceBuffer<T>& device, cudaStream_t stream) {
  TRAINSIM_ASSERT(static_cast<int64_t>(host.size()) <= device.count(), "CudaMoe: an index map larger than its buffer");
  if (host.empty()) return;
  check_cuda(cudaMemcpyAsync(device.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (MoE index map)");
}

}  // namespace

CudaMoe::CudaMoe(const ModelSpec& m, const runtime::StageLayout& layout, int64_t tokens, const ParamStore& params, DeviceArena& arena,
                 Gemm& gemm, cudaStream_t stream)
    : tokens_(tokens), hidden_(m.hidden), experts_(m.moe->experts), top_k_(m.moe->top_k), local_(m.moe->experts / layout.ep),
      expert_width_(m.moe->expert_ffn_hidden), shared_width_(m.moe->shared_experts * m.moe->expert_ffn_hidden),
      gates_(m.ffn_kind == FfnKind::kSwiglu ? 2 : 1), copies_(tokens * m.moe->top_k),
      max_received_(max_received_rows(tokens, m.moe->top_k, m.moe->experts, layout.ep)), swiglu_(m.ffn_kind == FfnKind::kSwiglu),
      arena_(arena), gemm_(gemm), stream_(stream) {
  TRAINSIM_ASSERT(layout.tp == 1, "check_cuda_plan keeps MoE models at tp 1 on the CUDA runtime");
  for (const LayerRange& chunk : layout.chunks) {  // local layers: the chunks' layers in order, as CudaStage's
    for (int64_t l = chunk.first; l < chunk.last; ++l) {
      const std::string n = "layer" + std::to_string(l) + ".";
      Layer w;
      w.router = params.weight(n + "router");
      w.drouter = params.grad(n + "router");
      for (int64_t j = 0; j < local_; ++j) {  // this EP rank's experts: global ids ep_rank x local + j (stage_moe.cpp)
        w.experts.push_back(ffn_of(params, n + "expert" + std::to_string(layout.ep_rank * local_ + j) + "."));
      }
      if (shared_width_ > 0) w.shared = ffn_of(params, n + "shared.");
      layers_.push_back(std::move(w));
    }
  }
  const int64_t T = tokens_, C = copies_, R = max_received_, h = hidden_, rows = std::max(R, T);
  const int64_t width = std::max(expert_width_, shared_width_);
  host_logits_.resize(static_cast<size_t>(T * experts_));
  logits_ = DeviceBuffer<float>(arena, T * experts_, "MoE: router logits");
  dweight_ = DeviceBuffer<float>(arena, C, "MoE: router weight gradients");
  dlogits_ = DeviceBuffer<bf16>(arena, T * experts_, "MoE: router logit gradients");
  permuted_ = DeviceBuffer<bf16>(arena, C * h, "MoE: copies in expert order");
  returned_ = DeviceBuffer<bf16>(arena, C * h, "MoE: copy gradients returned");
  received_ = DeviceBuffer<bf16>(arena, R * h, "MoE: rows received");
  processed_ = DeviceBuffer<bf16>(arena, R * h, "MoE: rows returned to their ranks");
  major_ = DeviceBuffer<bf16>(arena, R * h, "MoE: expert outputs");
  major_grad_ = DeviceBuffer<bf16>(arena, R * h, "MoE: expert input gradients");
  dact_ = DeviceBuffer<bf16>(arena, rows * width, "MoE: expert activation gradient");
  dfc1_ = DeviceBuffer<bf16>(arena, rows * gates_ * width, "MoE: expert FC1 gradient");
  out_ = DeviceBuffer<bf16>(arena, T * h, "MoE: layer output");
  dx_ = DeviceBuffer<bf16>(arena, T * h, "MoE: input gradient");
  if (shared_width_ > 0) shared_ = DeviceBuffer<bf16>(arena, T * h, "MoE: shared experts' output or input gradient");
}

CudaMoe::Ffn CudaMoe::ffn_of(const ParamStore& p, const std::string& prefix) {
  Ffn f;
  f.w_1 = p.weight(prefix + "w_1");
  f.b_1 = p.weight_if_any(prefix + "b_1");
  f.w_2 = p.weight(prefix + "w_2");
  f.b_2 = p.weight_if_any(prefix + "b_2");
  f.dw_1 = p.grad(prefix + "w_1");
  f.db_1 = p.grad_if_any(prefix + "b_1");
  f.dw_2 = p.grad(prefix + "w_2");
  f.db_2 = p.grad_if_any(prefix + "b_2");
  return f;
}

void CudaMoe::allocate(MoeActivations& a) {
  const int64_t T = tokens_, C = copies_, R = max_received_, h = hidden_, f = expert_width_;
  a.token_of_row = DeviceBuffer<int32_t>(arena_, C, "activations: MoE copy tokens");
  a.row_of_slot = DeviceBuffer<int32_t>(arena_, C, "activations: MoE copy rows");
  a.expert_of_slot = DeviceBuffer<int32_t>(arena_, C, "activations: MoE copy experts");
  a.received_row = DeviceBuffer<int32_t>(arena_, R, "activations: MoE expert-major rows");
  a.expert_major_row = DeviceBuffer<int32_t>(arena_, R, "activations: MoE received rows");
  a.weight_of_slot = DeviceBuffer<float>(arena_, C, "activations: MoE router weights");
  a.weight_of_row = DeviceBuffer<float>(arena_, C, "activations: MoE router weights, permuted");
  a.combined = DeviceBuffer<bf16>(arena_, C * h, "activations: MoE expert outputs returned");
  a.expert_in = DeviceBuffer<bf16>(arena_, R * h, "activations: MoE expert inputs");
  a.fc1 = DeviceBuffer<bf16>(arena_, R * gates_ * f, "activations: MoE expert fc1");
  a.act = DeviceBuffer<bf16>(arena_, R * f, swiglu_ ? "activations: MoE expert swiglu" : "activations: MoE expert gelu");
  if (shared_width_ > 0) {
    a.shared_fc1 = DeviceBuffer<bf16>(arena_, T * gates_ * shared_width_, "activations: MoE shared fc1");
    a.shared_act = DeviceBuffer<bf16>(arena_, T * shared_width_, "activations: MoE shared activation");
  }
}

void CudaMoe::check_group() const {
  TRAINSIM_ASSERT(ep_ != nullptr && static_cast<int64_t>(ep_->size()) * local_ == experts_,
                  "CudaMoe: the trainer sets the EP group (experts / local ranks) before the first forward");
}

// moe_forward's router, route_top_k, dispatch_layout, the counts' all-to-all and expert_batches.
void CudaMoe::route(const Layer& w, const bf16* x, MoeActivations& a) {
  const int64_t T = tokens_, E = experts_;
  // GPU-CHECK: a narrow GEMM (n = E, 4 for moe-tiny: 8-byte rows of W_r, 16-byte rows of the
  // logits); so are the backward's (n = E, k = E). That cuBLASLt's heuristic finds an algorithm for
  // them, and for every expert row count the experts' GEMMs meet (one cached plan per count).
  gemm_.matmul(x, false, w.router, false, logits_.data(), kFp32, T, E, hidden_, 1.0f, 0.0f, stream_);  // (T, E) = x W_r
  check_cuda(cudaMemcpyAsync(host_logits_.data(), logits_.data(), logits_.bytes(), cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync (router logits)");
  // GPU-CHECK: the host waits here for the compute stream once per MoE layer and micro-batch, and
  // the EP group's ranks then meet in MPI_Alltoall: the GPU idles while the host routes (microseconds
  // for the toy models) and the launch queue refills. Measure the gap with nsys; the pipeline and DP
  // streams keep running meanwhile (only the compute stream is waited for).
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (router logits)");
  const runtime::Routing routing = runtime::route_top_k(Eigen::Map<const cpu::Matrix>(host_logits_.data(), T, E), top_k_);
  a.layout = runtime::dispatch_layout(routing, E, ep_->size());
  // Experts ascend with the rank holding them, so expert_rows is already in blocks by destination.
  a.batches = runtime::expert_batches(ep_->all_to_all_counts(a.layout.expert_rows, local_), ep_->size(), local_);
  const MoeIndexMaps maps = index_maps(routing, a.layout, a.batches);
  // Pageable host memory: each copy has left `maps` (for a staging buffer) when cudaMemcpyAsync returns.
  upload(maps.token_of_row, a.token_of_row, stream_);
  upload(maps.row_of_slot, a.row_of_slot, stream_);
  upload(maps.expert_of_slot, a.expert_of_slot, stream_);
  upload(maps.weight_of_slot, a.weight_of_slot, stream_);
  upload(maps.weight_of_row, a.weight_of_row, stream_);
  upload(maps.received_row, a.received_row, stream_);
  upload(maps.expert_major_row, a.expert_major_row, stream_);
}

const bf16* CudaMoe::forward(int64_t layer, const bf16* x, MoeActivations& a, SpanKind kind) {
  check_group();
  const Layer& w = layers_[static_cast<size_t>(layer)];
  const int64_t T = tokens_, C = copies_, h = hidden_, f = expert_width_, u = gates_ * f;
  route(w, x, a);
  const int64_t R = static_cast<int64_t>(a.batches.row.size());
  moe_gather_rows(x, a.token_of_row.data(), nullptr, permuted_.data(), C, h, stream_);  // each copy's token, by expert
  ep_->all_to_all_rows(permuted_.data(), a.layout.rank_rows, received_.data(), a.batches.source_rows, h, kind);
  moe_gather_rows(received_.data(), a.received_row.data(), nullptr, a.expert_in.data(), R, h, stream_);  // expert-major
  const std::vector<int64_t> first = expert_first_rows(a.batches);
  for (int64_t j = 0; j < local_; ++j) {
    const int64_t o = first[static_cast<size_t>(j)], n = a.batches.expert_rows[static_cast<size_t>(j)];
    ffn_forward(w.experts[static_cast<size_t>(j)], f, a.expert_in.data() + o * h, n, a.fc1.data() + o * u, a.act.data() + o * f,
                major_.data() + o * h);
  }
  moe_gather_rows(major_.data(), a.expert_major_row.data(), nullptr, processed_.data(), R, h, stream_);  // back to arrival order
  ep_->all_to_all_rows(processed_.data(), a.batches.source_rows, a.combined.data(), a.layout.rank_rows, h, kind);
  // y_t = sum_j w_tj out_tj
  moe_combine_rows(a.combined.data(), a.row_of_slot.data(), a.weight_of_slot.data(), out_.data(), T, top_k_, h, stream_);
  if (w.shared.w_1 != nullptr) {  // stage_moe.cpp: y += the shared experts' FFN on every token
    ffn_forward(w.shared, shared_width_, x, T, a.shared_fc1.data(), a.shared_act.data(), shared_.data());
    add(out_.data(), shared_.data(), out_.data(), T * h, stream_);
  }
  return out_.data();
}

const bf16* CudaMoe::backward(int64_t layer, const bf16* dy, const bf16* x, const MoeActivations& a, SpanKind kind) {
  check_group();
  const Layer& w = layers_[static_cast<size_t>(layer)];
  const int64_t T = tokens_, C = copies_, E = experts_, h = hidden_, f = expert_width_, u = gates_ * f;
  const int64_t R = static_cast<int64_t>(a.batches.row.size());
  // y_t = sum_j w_tj out_tj: d out_tj = w_tj dy_t, d w_tj = dy_t . out_tj.
  moe_weight_grads(dy, a.combined.data(), a.row_of_slot.data(), dweight_.data(), T, top_k_, h, stream_);
  moe_gather_rows(dy, a.token_of_row.data(), a.weight_of_row.data(), permuted_.data(), C, h, stream_);
  // The combine's backward sends the gradients the way the dispatch sent the copies, and back.
  ep_->all_to_all_rows(permuted_.data(), a.layout.rank_rows, received_.data(), a.batches.source_rows, h, kind);
  moe_gather_rows(received_.data(), a.received_row.data(), nullptr, major_.data(), R, h, stream_);
  const std::vector<int64_t> first = expert_first_rows(a.batches);
  for (int64_t j = 0; j < local_; ++j) {
    const int64_t o = first[static_cast<size_t>(j)], n = a.batches.expert_rows[static_cast<size_t>(j)];
    ffn_backward(w.experts[static_cast<size_t>(j)], f, major_.data() + o * h, a.expert_in.data() + o * h, a.fc1.data() + o * u,
                 a.act.data() + o * f, n, major_grad_.data() + o * h);
  }
  moe_gather_rows(major_grad_.data(), a.expert_major_row.data(), nullptr, processed_.data(), R, h, stream_);
  ep_->all_to_all_rows(processed_.data(), a.batches.source_rows, returned_.data(), a.layout.rank_rows, h, kind);
  moe_combine_rows(returned_.data(), a.row_of_slot.data(), nullptr, dx_.data(), T, top_k_, h, stream_);  // each copy's into its token
  // The router: softmax over the chosen logits backward, then the GEMM's gradients.
  moe_router_backward(a.weight_of_slot.data(), a.expert_of_slot.data(), dweight_.data(), dlogits_.data(), T, top_k_, E, stream_);
  gemm_.matmul(x, true, dlogits_.data(), false, w.drouter, kFp32, h, E, T, 1.0f, 1.0f, stream_);        // dW_r += x^T dlogits
  gemm_.matmul(dlogits_.data(), false, w.router, true, dx_.data(), kBf16, T, h, E, 1.0f, 1.0f, stream_);  // dx += dlogits W_r^T
  if (w.shared.w_1 != nullptr) {
    ffn_backward(w.shared, shared_width_, dy, x, a.shared_fc1.data(), a.shared_act.data(), T, shared_.data());
    add(dx_.data(), shared_.data(), dx_.data(), T * h, stream_);
  }
  return dx_.data();
}

// ffn_forward: GELU, or SwiGLU on [gate | up]; the output bias on every row (tp 1).
void CudaMoe::ffn_forward(const Ffn& p, int64_t width, const bf16* x, int64_t rows, bf16* fc1, bf16* act, bf16* out) {
  if (rows == 0) return;  // an expert no copy reached this micro-batch
  const int64_t h = hidden_, u = gates_ * width;
  gemm_.matmul(x, false, p.w_1, false, fc1, kBf16, rows, u, h, 1.0f, 0.0f, stream_);
  if (p.b_1 != nullptr) add_bias(fc1, p.b_1, rows, u, stream_);
  if (swiglu_) {
    swiglu_forward(fc1, act, rows, width, stream_);
  } else {
    gelu_forward(fc1, act, rows * width, stream_);
  }
  gemm_.matmul(act, false, p.w_2, false, out, kBf16, rows, h, width, 1.0f, 0.0f, stream_);
  if (p.b_2 != nullptr) add_bias(out, p.b_2, rows, h, stream_);
}

// ffn_backward.
void CudaMoe::ffn_backward(const Ffn& p, int64_t width, const bf16* dout, const bf16* x, const bf16* fc1, const bf16* act, int64_t rows,
                           bf16* dx) {
  if (rows == 0) return;
  const int64_t h = hidden_, u = gates_ * width;
  if (p.db_2 != nullptr) bias_grad(dout, p.db_2, rows, h, stream_);
  gemm_.matmul(act, true, dout, false, p.dw_2, kFp32, width, h, rows, 1.0f, 1.0f, stream_);      // dW2 += act^T dout
  gemm_.matmul(dout, false, p.w_2, true, dact_.data(), kBf16, rows, width, h, 1.0f, 0.0f, stream_);  // dact = dout W2^T
  if (swiglu_) {
    swiglu_backward(dact_.data(), fc1, dfc1_.data(), rows, width, stream_);
  } else {
    gelu_backward(dact_.data(), fc1, dfc1_.data(), rows * width, stream_);
  }
  if (p.db_1 != nullptr) bias_grad(dfc1_.data(), p.db_1, rows, u, stream_);
  gemm_.matmul(x, true, dfc1_.data(), false, p.dw_1, kFp32, h, u, rows, 1.0f, 1.0f, stream_);   // dW1 += x^T dfc1
  gemm_.matmul(dfc1_.data(), false, p.w_1, true, dx, kBf16, rows, h, u, 1.0f, 0.0f, stream_);  // dx = dfc1 W1^T
}

}  // namespace trainsim::cuda
