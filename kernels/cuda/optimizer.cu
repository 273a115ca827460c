// The optimizer's kernels of kernels.cuh: the sum of squares for global-norm clipping (fp64
// per thread and per block, one fp64 atomic per block) and AdamW as the CPU trainer
// (runtime/cpu/trainer.cpp optimizer_step): g' = g * grad_scale; m = b1 m + (1 - b1) g';
// v = b2 v + (1 - b2) g'^2; p -= lr * ((m / c1) / (sqrt(v / c2) + eps) + weight_decay * p) with
// c = 1 - beta^step (the decay term is absent when weight_decay == 0, as on the CPU).
#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

constexpr unsigned kMaxReduceBlocks = 1024;

__global__ void sum_of_squares_kernel(const float* g, const float* mask, int64_t count, double* out) {
  __shared__ double scratch[32];
  double sum = 0.0;
  for (int64_t i = global_thread(); i < count; i += grid_threads()) {
    const double v = g[i];
    sum += mask == nullptr ? v * v : static_cast<double>(mask[i]) * v * v;
  }
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}

__global__ void adamw_kernel(float* master, const float* g, float* m, float* v, bf16* weight, int64_t count, float lr,
                             float beta1, float beta2, float eps, float weight_decay, float c1, float c2, float grad_scale) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float grad = g[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * grad;
    const float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    float p = master[i];
    float step = (mi / c1) / (sqrtf(vi / c2) + eps);
    if (weight_decay != 0.0f) step += weight_decay * p;
    p -= lr * step;
    master[i] = p;
    if (weight != nullptr) weight[i] = __float2bfloat16(p);
  }
}

}  // namespace

void sum_of_squares(const float* g, const float* mask, int64_t count, double* out, cudaStream_t stream) {
  if (count <= 0) return;
  const unsigned blocks = std::min(grid_for(count), kMaxReduceBlocks);
  sum_of_squares_kernel<<<blocks, kThreads, 0, stream>>>(g, mask, count, out);
  check_launch("sum_of_squares");
}

void adamw(float* master, const float* g, float* m, float* v, bf16* weight, int64_t count, const AdamW& settings,
           float grad_scale, cudaStream_t stream) {
  if (count <= 0) return;
  // In float, as the CPU trainer computes them.
  const float step = static_cast<float>(settings.step);
  const float c1 = 1.0f - std::pow(settings.beta1, step), c2 = 1.0f - std::pow(settings.beta2, step);
  adamw_kernel<<<grid_for(count), kThreads, 0, stream>>>(master, g, m, v, weight, count, settings.lr, settings.beta1,
                                                         settings.beta2, settings.eps, settings.weight_decay, c1, c2,
                                                         grad_scale);
  check_launch("adamw");
}

}  // namespace trainsim::cuda
