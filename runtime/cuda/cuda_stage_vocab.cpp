// CudaStage's vocabulary ends (see cuda_stage.hpp): the token embedding of the first stage, and
// the LM head and cross-entropy of the last. With tp > 1 both are split by vocabulary as Megatron-LM
// splits them and as runtime/cpu/cpu_model.cpp does (embed, head_loss, embed_backward, backward): each
// TP rank holds ids vocab_.first .. + vocab_.count of wte and lm_head, its partial lookups and head
// input gradients are summed over TP, the cross-entropy reduces the row max and the sum of exp and
// target logit (kernels/cuda/vocab_parallel.cuh). With tp 1 the kernels are those of the
// replicated model, so a one-GPU run is what it was before the split.
#include "common/errors.hpp"
#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "runtime/cuda/cuda_stage.hpp"

namespace trainsim::cuda {

void CudaStage::allocate_vocab_workspaces() {
  const int64_t T = tokens_, h = hidden_;
  if (layout_.embedding && sp_) embedded_ = DeviceBuffer<bf16>(arena_, T * h, "embedding output");
  if (!layout_.head) return;
  logits_ = DeviceBuffer<bf16>(arena_, T * vocab_.count, "logits");
  dxf_full_ = DeviceBuffer<bf16>(arena_, T * h, "final norm output gradient");
  if (layout_.tp > 1) {
    row_max_ = DeviceBuffer<float>(arena_, T, "cross-entropy row maxima");
    vocab_stats_ = DeviceBuffer<float>(arena_, 2 * T, "cross-entropy sums of exp and target logits");
  }
}

// cpu_model.cpp StageModel::embed. tp 1: every token's row plus its position in one kernel (SP of
// one rank keeps all rows). tp > 1: the lookup in this rank's vocabulary rows (zero rows for other
// ids) over all T tokens, summed over TP (all-reduce, or with SP reduce-scatter to this rank's R
// rows), then the learned positions of the rows held, added once after the sum as the CPU adds them.
void CudaStage::embed_forward(ActivationSlot& s) {
  const ParamStore& p = *params_;
  const int64_t R = rows_, h = hidden_;
  const bf16* wpe = p.weight_if_any("wpe");
  bf16* x = s.x[0].data();
  if (layout_.tp == 1) {
    bf16* out = sp_ ? embedded_.data() : x;
    embedding_forward_at(s.tokens, p.weight("wte"), wpe, positions_.data(), out, tokens_, seq_, h, stream_);
    if (sp_) {
      check_cuda(cudaMemcpyAsync(x, out + tp_.rank() * R * h, static_cast<size_t>(R * h) * sizeof(bf16), cudaMemcpyDeviceToDevice,
                                 stream_),
                 "cudaMemcpyAsync (embedding rows of this TP rank)");
    }
    return;
  }
  bf16* lookup = sp_ ? embedded_.data() : x;
  embedding_shard_forward(s.tokens, p.weight("wte"), vocab_, lookup, tokens_, h, stream_);
  bf16* summed = leave_tp(lookup, x);  // x itself: all-reduced in place, or this rank's rows of the reduce-scatter
  TRAINSIM_ASSERT(summed == x, "the embedding's TP sum lands in the slot's input rows");
  // GPU-CHECK: NCCL's bf16 sum of one rank's token row and the others' zeros is expected to be that
  // row exactly (x + 0), so that tp > 1 embeds as tp 1 does; test_vocab_parallel_kernels.cpp sums on
  // the host, only the tp > 1 parity layouts run NCCL's sum.
  if (wpe != nullptr) add_position_embedding(x, wpe, positions_.data(), R, sp_ ? tp_.rank() * R : 0, seq_, h, stream_);
}

// cpu_model.cpp StageModel::embed_backward. The whole micro-batch's input gradient (gathered from
// the SP row blocks) on every TP rank: wte's gradient in this rank's vocabulary rows (tp 1: all of
// them), and wpe's whole on every TP rank (so ParamStore does not count wpe as an SP-partial
// gradient; the CPU sums its rows' partial ones over TP instead: the same sum).
void CudaStage::embed_backward(const ActivationSlot& s, const bf16* dy) {
  const ParamStore& p = *params_;
  const bf16* full = enter_tp(dy, dfull_.data());  // (T, h)
  float* dwte = p.grad("wte");
  if (layout_.tp > 1) {
    embedding_shard_backward(s.tokens, full, dwte, vocab_, tokens_, hidden_, stream_);
    dwte = nullptr;  // scattered: embedding_backward_at adds the positions only
  }
  embedding_backward_at(s.tokens, full, dwte, p.grad_if_any("wpe"), positions_.data(), tokens_, seq_, hidden_, stream_);
}

// cpu_model.cpp StageModel::forward's head: final norm, gathered rows with SP, logits of this rank's
// ids (T, vocab / tp), the loss and dlogits.
void CudaStage::head_forward(ActivationSlot& s, float loss_scale) {
  const ParamStore& p = *params_;
  const int64_t T = tokens_, h = hidden_, v = vocab_.count;
  norm_forward(s.x.back().data(), p.weight("lnf_g"), p.weight_if_any("lnf_b"), s.xf.data(), s.final_mean.data(),
               s.final_rstd.data());
  const bf16* full = enter_tp(s.xf.data(), s.final_full.data());
  gemm_.matmul(full, false, p.weight(head_weight_), true, logits_.data(), OutputType::kBf16, T, v, h, 1.0f, 0.0f, stream_);  // (T, V / tp)
  if (layout_.tp == 1) {
    cross_entropy(logits_.data(), s.targets, s.dlogits.data(), loss_sum_.data(), T, v, loss_scale, stream_);
  } else {
    vocab_parallel_loss(s, loss_scale);
  }
}

// cpu_model.cpp StageModel::head_loss with tp > 1: Megatron's vocabulary-parallel cross-entropy.
// Every TP rank adds the whole loss to its loss_sum (the trainer reads TP rank 0's).
// GPU-CHECK: two small fp32 all-reduces per micro-batch on the compute stream (T and 2T floats),
// latency-bound: how much of a tp 2 run's tp_comm_s they take.
void CudaStage::vocab_parallel_loss(ActivationSlot& s, float loss_scale) {
  const int64_t T = tokens_;
  vocab_row_max(logits_.data(), row_max_.data(), T, vocab_.count, stream_);
  tp_.all_reduce_max_fp32(row_max_.data(), T);
  vocab_softmax_stats(logits_.data(), s.targets, row_max_.data(), vocab_stats_.data(), vocab_, T, stream_);
  tp_.all_reduce_fp32({{vocab_stats_.data(), 2 * T}});
  vocab_cross_entropy_grad(logits_.data(), s.targets, row_max_.data(), vocab_stats_.data(), s.dlogits.data(), loss_sum_.data(), vocab_,
                           T, loss_scale, stream_);
}

// cpu_model.cpp StageModel::backward's head: the weight gradient of this rank's vocabulary rows,
// the input gradient dlogits W (a partial sum over TP ranks with tp > 1: all-reduced, or
// reduce-scattered to this rank's rows with SP), then the final norm's backward into dx (R, h).
void CudaStage::head_backward(ActivationSlot& s, bf16* dx) {
  const ParamStore& p = *params_;
  const int64_t T = tokens_, R = rows_, h = hidden_, v = vocab_.count;
  const bf16* full = sp_ ? s.final_full.data() : s.xf.data();
  gemm_.matmul(s.dlogits.data(), true, full, false, p.grad(head_weight_), OutputType::kFp32, v, h, T, 1.0f, 1.0f, stream_);  // (V / tp, h)
  gemm_.matmul(s.dlogits.data(), false, p.weight(head_weight_), false, dxf_full_.data(), OutputType::kBf16, T, h, v, 1.0f, 0.0f, stream_);
  const bf16* dxf = layout_.tp > 1 ? leave_tp(dxf_full_.data(), rows_tmp_.data())
                                   : dxf_full_.data() + (sp_ ? tp_.rank() * R * h : 0);  // tp 1: this rank's rows
  norm_backward(dxf, s.x.back().data(), p.weight("lnf_g"), s.final_mean.data(), s.final_rstd.data(), dx, p.grad("lnf_g"),
                p.grad_if_any("lnf_b"));
}

}  // namespace trainsim::cuda
