// Layer norm and RMSNorm of kernels.cuh, as kernels/cpu/cpu_kernels.cpp: y = (x - mean) * rstd * gamma +
// beta with rstd = 1 / sqrt(var + 1e-5) (biased variance, two passes); backward
// dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * gamma. RMSNorm is the same with
// mean 0 and no beta (rstd = 1 / sqrt(mean(x^2) + 1e-5), dx = rstd * (g - x_hat * mean(g * x_hat))).
// One warp per row with fp32 statistics; dgamma, dbeta as column sums (one thread per column,
// deterministic, no atomics).
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

constexpr float kLayerNormEps = 1e-5f;  // kernels/cpu/cpu_kernels.cpp
constexpr int kRowsPerBlock = 8;        // one warp per row

// kRms: RMSNorm (mean taken as 0, no beta; mean_out is not written).
template <int kVec, bool kRms>
__global__ void layer_norm_forward_kernel(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, float* mean_out,
                                          float* rstd_out, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const bf16* xr = x + row * cols;
  float v[kVec], g[kVec], b[kVec];
  float mean = 0.0f;
  if constexpr (!kRms) {
    float sum = 0.0f;
    for (int64_t c = lane * kVec; c < cols; c += 32 * kVec) {
      load_bf16<kVec>(xr + c, v);
      for (int j = 0; j < kVec; ++j) sum += v[j];
    }
    mean = warp_sum(sum) / static_cast<float>(cols);
  }
  float var = 0.0f;
  for (int64_t c = lane * kVec; c < cols; c += 32 * kVec) {
    load_bf16<kVec>(xr + c, v);
    for (int j = 0; j < kVec; ++j) var += (v[j] - mean) * (v[j] - mean);
  }
  const float rstd = rsqrtf(warp_sum(var) / static_cast<float>(cols) + kLayerNormEps);
  for (int64_t c = lane * kVec; c < cols; c += 32 * kVec) {
    load_bf16<kVec>(xr + c, v);
    load_bf16<kVec>(gamma + c, g);
    if constexpr (kRms) {
      for (int j = 0; j < kVec; ++j) v[j] = v[j] * rstd * g[j];
    } else {
      load_bf16<kVec>(beta + c, b);
      for (int j = 0; j < kVec; ++j) v[j] = (v[j] - mean) * rstd * g[j] + b[j];
    }
    store_bf16<kVec>(y + row * cols + c, v);
  }
  if (lane == 0) {
    if constexpr (!kRms) mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// kRms: mean is null (0) and the mean(g) term drops out.
template <int kVec, bool kRms>
__global__ void layer_norm_backward_kernel(const bf16* dy, const bf16* x, const bf16* gamma, const float* mean,
                                           const float* rstd, bf16* dx, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const bf16* dyr = dy + row * cols;
  const bf16* xr = x + row * cols;
  const float mu = kRms ? 0.0f : mean[row], r = rstd[row];
  float d[kVec], v[kVec], g[kVec];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t c = lane * kVec; c < cols; c += 32 * kVec) {
    load_bf16<kVec>(dyr + c, d);
    load_bf16<kVec>(xr + c, v);
    load_bf16<kVec>(gamma + c, g);
    for (int j = 0; j < kVec; ++j) {
      const float gj = d[j] * g[j];
      sum_g += gj;
      sum_gx += gj * (v[j] - mu) * r;
    }
  }
  const float mean_g = kRms ? 0.0f : warp_sum(sum_g) / static_cast<float>(cols);
  const float mean_gx = warp_sum(sum_gx) / static_cast<float>(cols);
  for (int64_t c = lane * kVec; c < cols; c += 32 * kVec) {
    load_bf16<kVec>(dyr + c, d);
    load_bf16<kVec>(xr + c, v);
    load_bf16<kVec>(gamma + c, g);
    for (int j = 0; j < kVec; ++j) d[j] = r * (d[j] * g[j] - mean_g - (v[j] - mu) * r * mean_gx);
    store_bf16<kVec>(dx + row * cols + c, d);
  }
}

// dgamma[c] += sum_r dy[r, c] x_hat[r, c]; dbeta[c] += sum_r dy[r, c]. Block (32, 8) as bias_grad.
// RMSNorm: mean and dbeta are null.
__global__ void layer_norm_param_grad_kernel(const bf16* dy, const bf16* x, const float* mean, const float* rstd,
                                             float* dgamma, float* dbeta, int64_t rows, int64_t cols) {
  __shared__ float partial_g[8][33], partial_b[8][33];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum_g = 0.0f, sum_b = 0.0f;
  if (col < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += 8) {
      const float d = __bfloat162float(dy[r * cols + col]);
      sum_g += d * (__bfloat162float(x[r * cols + col]) - (mean ? mean[r] : 0.0f)) * rstd[r];
      sum_b += d;
    }
  }
  partial_g[threadIdx.y][threadIdx.x] = sum_g;
  partial_b[threadIdx.y][threadIdx.x] = sum_b;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total_g = 0.0f, total_b = 0.0f;
    for (int j = 0; j < 8; ++j) total_g += partial_g[j][threadIdx.x], total_b += partial_b[j][threadIdx.x];
    dgamma[col] += total_g;
    if (dbeta) dbeta[col] += total_b;
  }
}

}  // namespace

namespace {

template <bool kRms>
void launch_norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, float* mean, float* rstd, int64_t rows,
                         int64_t cols, cudaStream_t stream, const char* name) {
  if (rows <= 0 || cols <= 0) return;
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  if (cols % 8 == 0 && aligned16(x) && aligned16(gamma) && aligned16(beta) && aligned16(y)) {
    layer_norm_forward_kernel<8, kRms><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, gamma, beta, y, mean, rstd, rows, cols);
  } else {
    layer_norm_forward_kernel<1, kRms><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, gamma, beta, y, mean, rstd, rows, cols);
  }
  check_launch(name);
}

template <bool kRms>
void launch_norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* mean, const float* rstd, bf16* dx,
                          float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream, const char* name) {
  if (rows <= 0 || cols <= 0) return;
  // Parameter gradients first: dx may then overwrite dy.
  layer_norm_param_grad_kernel<<<static_cast<unsigned>((cols + 31) / 32), dim3(32, 8), 0, stream>>>(
      dy, x, mean, rstd, dgamma, dbeta, rows, cols);
  check_launch(std::string(name) + " (parameter gradients)");
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  if (cols % 8 == 0 && aligned16(dy) && aligned16(x) && aligned16(gamma) && aligned16(dx)) {
    layer_norm_backward_kernel<8, kRms><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(dy, x, gamma, mean, rstd, dx, rows, cols);
  } else {
    layer_norm_backward_kernel<1, kRms><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(dy, x, gamma, mean, rstd, dx, rows, cols);
  }
  check_launch(std::string(name) + " (dx)");
}

}  // namespace

void layer_norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, float* mean, float* rstd, int64_t rows,
                        int64_t cols, cudaStream_t stream) {
  launch_norm_forward<false>(x, gamma, beta, y, mean, rstd, rows, cols, stream, "layer_norm_forward");
}

void layer_norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* mean, const float* rstd, bf16* dx,
                         float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream) {
  launch_norm_backward<false>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, cols, stream, "layer_norm_backward");
}

void rms_norm_forward(const bf16* x, const bf16* gamma, bf16* y, float* rstd, int64_t rows, int64_t cols, cudaStream_t stream) {
  launch_norm_forward<true>(x, gamma, nullptr, y, nullptr, rstd, rows, cols, stream, "rms_norm_forward");
}

void rms_norm_backward(const bf16* dy, const bf16* x, const bf16* gamma, const float* rstd, bf16* dx, float* dgamma, int64_t rows,
                       int64_t cols, cudaStream_t stream) {
  launch_norm_backward<true>(dy, x, gamma, nullptr, rstd, dx, dgamma, nullptr, rows, cols, stream, "rms_norm_backward");
}

}  // namespace trainsim::cuda
