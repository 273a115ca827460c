// Rotary position embedding of kernels.cuh, as kernels/cpu/cpu_kernels.cpp rotary_embedding: one thread
// per (row, rotated head, pair i < d/2) turns (x_i, x_{i+d/2}) by position x theta^(-2i/d) (minus
// that with `inverse`). The angle is formed in double (positions up to 10^5 times frequencies near
// 1 need more than fp32's 24 bits to match the CPU's cos/sin to bf16 precision); RoPE is a
// vanishing share of a layer's time, so double math costs nothing visible. With context
// parallelism (rotary_embedding_at, context_parallel.cuh) row r turns by its true position
// positions[r % seq] instead of r % seq.
#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

__global__ void rotary_kernel(bf16* qkv, const int32_t* positions, int64_t rows, int64_t seq, int rotated_heads, int head_dim,
                              int64_t stride, double log_theta, double sign) {
  const int half = head_dim / 2;
  const int64_t per_row = static_cast<int64_t>(rotated_heads) * half, total = rows * per_row;
  for (int64_t t = global_thread(); t < total; t += grid_threads()) {
    const int64_t r = t / per_row;
    const int head = static_cast<int>((t % per_row) / half), i = static_cast<int>(t % half);
    const int64_t position = positions == nullptr ? r % seq : positions[r % seq];
    const double angle = static_cast<double>(position) * exp(-2.0 * i / head_dim * log_theta);
    double s = 0, c = 0;
    sincos(angle, &s, &c);
    const float cf = static_cast<float>(c), sf = static_cast<float>(sign * s);
    bf16* x = qkv + r * stride + static_cast<int64_t>(head) * head_dim;
    const float a = __bfloat162float(x[i]), b = __bfloat162float(x[i + half]);
    x[i] = __float2bfloat16(a * cf - b * sf);
    x[i + half] = __float2bfloat16(b * cf + a * sf);
  }
}

}  // namespace

void rotary_embedding(bf16* qkv, int64_t rows, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim, double theta,
                      bool inverse, cudaStream_t stream) {
  rotary_embedding_at(qkv, nullptr, rows, seq, heads, kv_heads, head_dim, theta, inverse, stream);
}

void rotary_embedding_at(bf16* qkv, const int32_t* positions, int64_t rows, int64_t seq_rows, int64_t heads, int64_t kv_heads,
                         int64_t head_dim, double theta, bool inverse, cudaStream_t stream) {
  if (rows <= 0 || head_dim < 2) return;
  const int64_t rotated = heads + kv_heads, stride = (heads + 2 * kv_heads) * head_dim;
  rotary_kernel<<<grid_for(rows * rotated * (head_dim / 2)), kThreads, 0, stream>>>(
      qkv, positions, rows, seq_rows, static_cast<int>(rotated), static_cast<int>(head_dim), stride, std::log(theta), inverse ? -1.0 : 1.0);
  check_launch("rotary_embedding");
}

}  // namespace trainsim::cuda
