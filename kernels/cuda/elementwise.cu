// Element-wise kernels of kernels.cuh: fp32 <-> bf16 conversions, add, scale, fill, bias add and
// the bias gradient (column sums, one thread per column, deterministic: no atomics).
// bf16 kernels move 8 elements per 16-byte access when the pointers allow it.
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

struct AddOp {
  static constexpr int kInputs = 2;
  __device__ float operator()(float a, float b) const { return a + b; }
};

__global__ void fp32_to_bf16_kernel(const float* x, bf16* y, int64_t count, bool vec) {
  const int64_t vecs = vec ? count / 4 : 0;
  for (int64_t i = global_thread(); i < vecs; i += grid_threads()) {
    const float4 v = reinterpret_cast<const float4*>(x)[i];
    reinterpret_cast<__nv_bfloat162*>(y)[2 * i] = __floats2bfloat162_rn(v.x, v.y);
    reinterpret_cast<__nv_bfloat162*>(y)[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
  }
  for (int64_t i = vecs * 4 + global_thread(); i < count; i += grid_threads()) y[i] = __float2bfloat16(x[i]);
}

__global__ void bf16_to_fp32_kernel(const bf16* x, float* y, int64_t count, bool vec) {
  const int64_t vecs = vec ? count / 8 : 0;
  for (int64_t i = global_thread(); i < vecs; i += grid_threads()) {
    const Bf16x8 v = reinterpret_cast<const Bf16x8*>(x)[i];
    float4 lo, hi;
    lo.x = __bfloat162float(v.v[0]), lo.y = __bfloat162float(v.v[1]), lo.z = __bfloat162float(v.v[2]);
    lo.w = __bfloat162float(v.v[3]), hi.x = __bfloat162float(v.v[4]), hi.y = __bfloat162float(v.v[5]);
    hi.z = __bfloat162float(v.v[6]), hi.w = __bfloat162float(v.v[7]);
    reinterpret_cast<float4*>(y)[2 * i] = lo;
    reinterpret_cast<float4*>(y)[2 * i + 1] = hi;
  }
  for (int64_t i = vecs * 8 + global_thread(); i < count; i += grid_threads()) y[i] = __bfloat162float(x[i]);
}

__global__ void scale_fp32_kernel(float* x, float factor, int64_t count) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) x[i] *= factor;
}

__global__ void fill_fp32_kernel(float* x, float value, int64_t count) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) x[i] = value;
}

__global__ void accumulate_fp32_kernel(float* y, const float* x, int64_t count) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) y[i] += x[i];
}

// y (rows, cols) += bias (cols); 8 columns per thread when cols % 8 == 0 and aligned.
__global__ void add_bias_kernel(bf16* y, const bf16* bias, int64_t rows, int64_t cols, bool vec) {
  if (vec) {
    const int64_t per_row = cols / 8, vecs = rows * per_row;
    for (int64_t i = global_thread(); i < vecs; i += grid_threads()) {
      Bf16x8 v = reinterpret_cast<Bf16x8*>(y)[i];
      const Bf16x8 b = reinterpret_cast<const Bf16x8*>(bias)[i % per_row];
#pragma unroll
      for (int j = 0; j < 8; ++j) v.v[j] = __float2bfloat16(__bfloat162float(v.v[j]) + __bfloat162float(b.v[j]));
      reinterpret_cast<Bf16x8*>(y)[i] = v;
    }
    return;
  }
  for (int64_t i = global_thread(); i < rows * cols; i += grid_threads()) {
    y[i] = __float2bfloat16(__bfloat162float(y[i]) + __bfloat162float(bias[i % cols]));
  }
}

// dbias[c] += sum_r dy[r, c]. Block (32, 8): 32 adjacent columns (coalesced rows), 8 row phases.
__global__ void bias_grad_kernel(const bf16* dy, float* dbias, int64_t rows, int64_t cols) {
  __shared__ float partial[8][33];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum = 0.0f;
  if (col < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += 8) sum += __bfloat162float(dy[r * cols + col]);
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int j = 0; j < 8; ++j) total += partial[j][threadIdx.x];
    dbias[col] += total;
  }
}

}  // namespace

void fp32_to_bf16(const float* x, bf16* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  const bool vec = aligned16(x) && reinterpret_cast<uintptr_t>(y) % 8 == 0;
  fp32_to_bf16_kernel<<<grid_for(vec ? (count + 3) / 4 : count), kThreads, 0, stream>>>(x, y, count, vec);
  check_launch("fp32_to_bf16");
}

void bf16_to_fp32(const bf16* x, float* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  const bool vec = aligned16(x) && aligned16(y);
  bf16_to_fp32_kernel<<<grid_for(vec ? (count + 7) / 8 : count), kThreads, 0, stream>>>(x, y, count, vec);
  check_launch("bf16_to_fp32");
}

void add(const bf16* a, const bf16* b, bf16* out, int64_t count, cudaStream_t stream) {
  launch_map_bf16(a, b, out, count, AddOp{}, stream);
  check_launch("add");
}

void scale_fp32(float* x, float factor, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  scale_fp32_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, factor, count);
  check_launch("scale_fp32");
}

void fill_fp32(float* x, float value, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  fill_fp32_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, value, count);
  check_launch("fill_fp32");
}

void accumulate_fp32(float* y, const float* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  accumulate_fp32_kernel<<<grid_for(count), kThreads, 0, stream>>>(y, x, count);
  check_launch("accumulate_fp32");
}

void add_bias(bf16* y, const bf16* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const bool vec = cols % 8 == 0 && aligned16(y) && aligned16(bias);
  add_bias_kernel<<<grid_for(vec ? rows * cols / 8 : rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols, vec);
  check_launch("add_bias");
}

void bias_grad(const bf16* dy, float* dbias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  bias_grad_kernel<<<static_cast<unsigned>((cols + 31) / 32), dim3(32, 8), 0, stream>>>(dy, dbias, rows, cols);
  check_launch("bias_grad");
}

}  // namespace trainsim::cuda
