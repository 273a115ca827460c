// Softmax cross-entropy of kernels.cuh, as kernels/cpu/cpu_kernels.cpp: per row the loss
// -(x[t] - max - log(sum exp(x - max))) is added to *loss_sum (one fp32 atomic per row) and
// dlogits = scale * (softmax - onehot(t)). One block per row walks the whole vocabulary (256 up to
// 128k and more): one pass for the online max and sum, one for the gradient. dlogits may alias
// logits. A target outside [0, vocab) adds NaN to the loss rather than reading out of bounds.
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

constexpr int kLossThreads = 256;

template <int kVec>
__global__ void __launch_bounds__(kLossThreads)
    cross_entropy_kernel(const bf16* logits, const int32_t* targets, bf16* dlogits, float* loss_sum, int64_t vocab,
                         float scale) {
  __shared__ float scratch[64];
  const int64_t row = blockIdx.x;
  const bf16* x = logits + row * vocab;
  bf16* dx = dlogits + row * vocab;
  const int64_t target = targets[row];
  const bool valid = target >= 0 && target < vocab;
  const float target_logit = (threadIdx.x == 0 && valid) ? __bfloat162float(x[target]) : 0.0f;
  float m = -INFINITY, s = 0.0f, v[kVec];
  for (int64_t c = threadIdx.x * kVec; c < vocab; c += kLossThreads * kVec) {
    load_bf16<kVec>(x + c, v);
    for (int j = 0; j < kVec; ++j) {
      if (v[j] > m) {
        s = s * expf(m - v[j]) + 1.0f;
        m = v[j];
      } else if (m != -INFINITY) {
        s += expf(v[j] - m);
      }
    }
  }
  block_merge_softmax(m, s, scratch);  // all reads of the row above happen before any write below
  if (threadIdx.x == 0) atomicAdd(loss_sum, valid ? -(target_logit - m - logf(s)) : NAN);
  const float inv_sum = 1.0f / s;
  for (int64_t c = threadIdx.x * kVec; c < vocab; c += kLossThreads * kVec) {
    load_bf16<kVec>(x + c, v);
    for (int j = 0; j < kVec; ++j) v[j] = scale * (expf(v[j] - m) * inv_sum - (c + j == target ? 1.0f : 0.0f));
    store_bf16<kVec>(dx + c, v);
  }
}

}  // namespace

void cross_entropy(const bf16* logits, const int32_t* targets, bf16* dlogits, float* loss_sum, int64_t rows, int64_t vocab,
                   float scale, cudaStream_t stream) {
  if (rows <= 0 || vocab <= 0) return;
  if (vocab % 8 == 0 && aligned16(logits) && aligned16(dlogits)) {
    cross_entropy_kernel<8><<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(logits, targets, dlogits, loss_sum,
                                                                                    vocab, scale);
  } else {
    cross_entropy_kernel<1><<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(logits, targets, dlogits, loss_sum,
                                                                                    vocab, scale);
  }
  check_launch("cross_entropy");
}

}  // namespace trainsim::cuda
