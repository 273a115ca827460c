// Activations of kernels.cuh. GELU in the tanh form of kernels/cpu/cpu_kernels.cpp (GPT-2):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) and its exact derivative; SwiGLU
// silu(gate) * up over rows laid out [gate | up]. fp32 math on bf16 data, 8 elements per access.
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)

struct GeluOp {
  static constexpr int kInputs = 1;
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.0f + tanhf(kGeluC * (x + 0.044715f * x * x * x)));
  }
};

struct GeluBackwardOp {  // (dy, x) -> dx
  static constexpr int kInputs = 2;
  __device__ float operator()(float dy, float x) const {
    const float t = tanhf(kGeluC * (x + 0.044715f * x * x * x));
    const float du = kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
  }
};

__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// One group of `kVec` columns c..c+kVec of row r per iteration; width % kVec == 0.
template <int kVec>
__global__ void swiglu_forward_kernel(const bf16* x, bf16* y, int64_t rows, int64_t width) {
  const int64_t groups = width / kVec, total = rows * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / groups, c = (i % groups) * kVec;
    const bf16* gate = x + r * 2 * width + c;
    const bf16* up = gate + width;
    bf16* out = y + r * width + c;
    if constexpr (kVec == 8) {
      const Bf16x8 g = *reinterpret_cast<const Bf16x8*>(gate), u = *reinterpret_cast<const Bf16x8*>(up);
      Bf16x8 o;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float gv = __bfloat162float(g.v[j]);
        o.v[j] = __float2bfloat16(gv * sigmoid(gv) * __bfloat162float(u.v[j]));
      }
      *reinterpret_cast<Bf16x8*>(out) = o;
    } else {
      const float gv = __bfloat162float(*gate);
      *out = __float2bfloat16(gv * sigmoid(gv) * __bfloat162float(*up));
    }
  }
}

__device__ inline void swiglu_grad(float dy, float g, float u, bf16& dg, bf16& du) {
  const float s = sigmoid(g);
  dg = __float2bfloat16(dy * u * s * (1.0f + g * (1.0f - s)));  // d silu(g) / dg = s (1 + g (1 - s))
  du = __float2bfloat16(dy * g * s);
}

template <int kVec>
__global__ void swiglu_backward_kernel(const bf16* dy, const bf16* x, bf16* dx, int64_t rows, int64_t width) {
  const int64_t groups = width / kVec, total = rows * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / groups, c = (i % groups) * kVec;
    const bf16* gate = x + r * 2 * width + c;
    const bf16* up = gate + width;
    const bf16* d = dy + r * width + c;
    bf16* dgate = dx + r * 2 * width + c;
    bf16* dup = dgate + width;
    if constexpr (kVec == 8) {
      const Bf16x8 g = *reinterpret_cast<const Bf16x8*>(gate), u = *reinterpret_cast<const Bf16x8*>(up);
      const Bf16x8 dv = *reinterpret_cast<const Bf16x8*>(d);
      Bf16x8 dg, du;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        swiglu_grad(__bfloat162float(dv.v[j]), __bfloat162float(g.v[j]), __bfloat162float(u.v[j]), dg.v[j], du.v[j]);
      }
      *reinterpret_cast<Bf16x8*>(dgate) = dg;
      *reinterpret_cast<Bf16x8*>(dup) = du;
    } else {
      swiglu_grad(__bfloat162float(*d), __bfloat162float(*gate), __bfloat162float(*up), *dgate, *dup);
    }
  }
}

bool swiglu_vec(int64_t width, const void* a, const void* b, const void* c) {
  return width % 8 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
}

}  // namespace

void gelu_forward(const bf16* x, bf16* y, int64_t count, cudaStream_t stream) {
  launch_map_bf16(x, static_cast<const bf16*>(nullptr), y, count, GeluOp{}, stream);
  check_launch("gelu_forward");
}

void gelu_backward(const bf16* dy, const bf16* x, bf16* dx, int64_t count, cudaStream_t stream) {
  launch_map_bf16(dy, x, dx, count, GeluBackwardOp{}, stream);
  check_launch("gelu_backward");
}

void swiglu_forward(const bf16* x, bf16* y, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  if (swiglu_vec(width, x, y, x)) {
    swiglu_forward_kernel<8><<<grid_for(rows * width / 8), kThreads, 0, stream>>>(x, y, rows, width);
  } else {
    swiglu_forward_kernel<1><<<grid_for(rows * width), kThreads, 0, stream>>>(x, y, rows, width);
  }
  check_launch("swiglu_forward");
}

void swiglu_backward(const bf16* dy, const bf16* x, bf16* dx, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  if (swiglu_vec(width, dy, x, dx)) {
    swiglu_backward_kernel<8><<<grid_for(rows * width / 8), kThreads, 0, stream>>>(dy, x, dx, rows, width);
  } else {
    swiglu_backward_kernel<1><<<grid_for(rows * width), kThreads, 0, stream>>>(dy, x, dx, rows, width);
  }
  check_launch("swiglu_backward");
}

}  // namespace trainsim::cuda
