// The unfused causal attention of kernels.cuh, the reference path that keeps the s x s
// probabilities: Q, K, V repacked to (batch * heads, seq, head_dim) (K, V repeated per query head
// for GQA), S = scale Q K^T and O = P V with cublasGemmStridedBatchedEx (bf16 in and out, fp32
// compute), the causal softmax in place on the bf16 scores (one block per row, fp32 math).
// Backward: dV = P^T dO, dP = dO V^T, dS = scale P (dP - rowsum(dP P)), dQ = dS K, dK = dS^T Q,
// then dK, dV summed over each GQA group while unpacking (no atomics).
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

constexpr int kSoftmaxThreads = 128;

// dst (B*H, S, d) row (bh, t) = src[(b*S + t) * src_stride + src_col0 + (h / group) * d + c].
template <int kVec>
__global__ void pack_heads_kernel(const bf16* src, int64_t src_stride, int64_t src_col0, int64_t group, bf16* dst,
                                  int64_t seq, int64_t heads, int64_t d, int64_t total_groups) {
  const int64_t per_row = d / kVec;
  for (int64_t i = global_thread(); i < total_groups; i += grid_threads()) {
    const int64_t c = (i % per_row) * kVec, row = i / per_row, t = row % seq, bh = row / seq;
    const int64_t b = bh / heads, h = bh % heads;
    const bf16* in = src + (b * seq + t) * src_stride + src_col0 + (h / group) * d + c;
    bf16* out = dst + row * d + c;
    if constexpr (kVec == 8) {
      *reinterpret_cast<Bf16x8*>(out) = *reinterpret_cast<const Bf16x8*>(in);
    } else {
      *out = *in;
    }
  }
}

// dst[(b*S + t) * dst_stride + dst_col0 + g * d + c] = sum over the group's heads h of packed
// (bh, t, c), for g < dst_heads (heads = dst_heads * group).
__global__ void unpack_heads_kernel(const bf16* packed, bf16* dst, int64_t dst_stride, int64_t dst_col0, int64_t group,
                                    int64_t seq, int64_t dst_heads, int64_t d, int64_t total) {
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t c = i % d, g = (i / d) % dst_heads, token = i / (d * dst_heads);  // token = b * S + t
    const int64_t b = token / seq, t = token % seq;
    float sum = 0.0f;
    for (int64_t member = 0; member < group; ++member) {
      const int64_t bh = b * dst_heads * group + g * group + member;
      sum += __bfloat162float(packed[(bh * seq + t) * d + c]);
    }
    dst[token * dst_stride + dst_col0 + g * d + c] = __float2bfloat16(sum);
  }
}

// One block per row of the (B*H*S, S) scores: softmax over keys 0..t, zeros after.
__global__ void causal_softmax_kernel(bf16* probs, int64_t seq) {
  __shared__ float scratch[64];
  const int64_t row = blockIdx.x, t = row % seq;
  bf16* p = probs + row * seq;
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = threadIdx.x; j <= t; j += blockDim.x) {
    const float v = __bfloat162float(p[j]);
    if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else if (m != -INFINITY) {
      s += expf(v - m);
    }
  }
  block_merge_softmax(m, s, scratch);
  const float inv_sum = 1.0f / s;
  for (int64_t j = threadIdx.x; j < seq; j += blockDim.x) {
    p[j] = __float2bfloat16(j <= t ? expf(__bfloat162float(p[j]) - m) * inv_sum : 0.0f);
  }
}

// In place on dp_ds: dS = scale * P * (dP - sum_j P dP) for keys 0..t, zeros after.
__global__ void causal_softmax_backward_kernel(const bf16* probs, bf16* dp_ds, int64_t seq, float scale) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x, t = row % seq;
  const bf16* p = probs + row * seq;
  bf16* d = dp_ds + row * seq;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j <= t; j += blockDim.x) dot += __bfloat162float(p[j]) * __bfloat162float(d[j]);
  dot = block_sum(dot, scratch);
  for (int64_t j = threadIdx.x; j < seq; j += blockDim.x) {
    d[j] = __float2bfloat16(j <= t ? scale * __bfloat162float(p[j]) * (__bfloat162float(d[j]) - dot) : 0.0f);
  }
}

// Row-major per batch entry: C (m x n) = alpha op(A) op(B) + beta C, as C^T = op(B)^T op(A)^T in
// cuBLAS's column-major terms (see gemm.cu).
void batched_gemm(cublasHandle_t blas, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
                  int64_t stride_a, const bf16* b, int64_t stride_b, bf16* c, int64_t stride_c, int64_t batch,
                  const char* what) {
  const float beta = 0.0f;
  const int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  const cublasStatus_t status = cublasGemmStridedBatchedEx(
      blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b, CUDA_R_16BF, ldb, stride_b, a, CUDA_R_16BF, lda, stride_a, &beta, c, CUDA_R_16BF,
      static_cast<int>(n), stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    check_cublas(status, std::string("cublasGemmStridedBatchedEx for ") + what + " (m " + std::to_string(m) + ", n " +
                             std::to_string(n) + ", k " + std::to_string(k) + ", batch " + std::to_string(batch) + ")");
  }
}

inline size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The scratch: seven packed (B*H, S, d) bf16 tensors, then the (B*H, S, S) bf16 dP / dS.
struct Scratch {
  bf16 *q, *k, *v, *x, *dq, *dk, *dv, *ds;  // x: O in the forward, dO in the backward
  Scratch(void* base, const AttentionShape& s) {
    const size_t packed = align256(static_cast<size_t>(s.batch * s.heads * s.seq * s.head_dim) * sizeof(bf16));
    char* p = static_cast<char*>(base);
    bf16** parts[] = {&q, &k, &v, &x, &dq, &dk, &dv, &ds};
    for (bf16** part : parts) *part = reinterpret_cast<bf16*>(p), p += packed;
  }
};

void check_shape(const AttentionShape& s) {
  if (s.batch <= 0 || s.seq <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.head_dim <= 0 || s.heads % s.kv_heads != 0) {
    throw DeviceError("unfused attention: bad shape (batch " + std::to_string(s.batch) + ", seq " + std::to_string(s.seq) +
                      ", heads " + std::to_string(s.heads) + ", kv_heads " + std::to_string(s.kv_heads) + ", head_dim " +
                      std::to_string(s.head_dim) + "): all must be positive and kv_heads must divide heads");
  }
}

// dst (B*H, S, d) from columns src_col0 + (h / group) * d of src rows (B*S, src_stride).
void pack(const bf16* src, int64_t src_stride, int64_t src_col0, int64_t group, bf16* dst, const AttentionShape& s,
          cudaStream_t stream) {
  const int64_t elements = s.batch * s.heads * s.seq * s.head_dim;
  if (s.head_dim % 8 == 0 && src_stride % 8 == 0 && aligned16(src) && aligned16(dst)) {
    pack_heads_kernel<8><<<grid_for(elements / 8), kThreads, 0, stream>>>(src, src_stride, src_col0, group, dst, s.seq,
                                                                           s.heads, s.head_dim, elements / 8);
  } else {
    pack_heads_kernel<1><<<grid_for(elements), kThreads, 0, stream>>>(src, src_stride, src_col0, group, dst, s.seq, s.heads,
                                                                      s.head_dim, elements);
  }
  check_launch("unfused attention: pack heads");
}

void unpack(const bf16* packed, bf16* dst, int64_t dst_stride, int64_t dst_col0, int64_t group, int64_t dst_heads,
            const AttentionShape& s, cudaStream_t stream) {
  const int64_t total = s.batch * s.seq * dst_heads * s.head_dim;
  unpack_heads_kernel<<<grid_for(total), kThreads, 0, stream>>>(packed, dst, dst_stride, dst_col0, group, s.seq, dst_heads,
                                                                s.head_dim, total);
  check_launch("unfused attention: unpack heads");
}

void pack_qkv(const bf16* qkv, const Scratch& sc, const AttentionShape& s, cudaStream_t stream) {
  const int64_t stride = (s.heads + 2 * s.kv_heads) * s.head_dim, group = s.heads / s.kv_heads;
  pack(qkv, stride, 0, 1, sc.q, s, stream);
  pack(qkv, stride, s.heads * s.head_dim, group, sc.k, s, stream);
  pack(qkv, stride, (s.heads + s.kv_heads) * s.head_dim, group, sc.v, s, stream);
}

}  // namespace

size_t unfused_attention_scratch_bytes(const AttentionShape& s) {
  const size_t packed = align256(static_cast<size_t>(s.batch * s.heads * s.seq * s.head_dim) * sizeof(bf16));
  return 7 * packed + static_cast<size_t>(s.batch * s.heads * s.seq * s.seq) * sizeof(bf16);
}

void causal_softmax(bf16* scores, int64_t rows, int64_t seq, cudaStream_t stream) {
  if (rows <= 0 || seq <= 0) return;
  causal_softmax_kernel<<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(scores, seq);
  check_launch("unfused attention: causal softmax");
}

void unfused_attention_forward(void* blas, const bf16* qkv, bf16* out, bf16* probs, void* scratch, const AttentionShape& s,
                               cudaStream_t stream) {
  check_shape(s);
  auto handle = static_cast<cublasHandle_t>(blas);
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  const Scratch sc(scratch, s);
  const int64_t bh = s.batch * s.heads, sd = s.seq * s.head_dim, ss = s.seq * s.seq;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  pack_qkv(qkv, sc, s, stream);
  batched_gemm(handle, false, true, s.seq, s.seq, s.head_dim, scale, sc.q, sd, sc.k, sd, probs, ss, bh, "S = Q K^T");
  causal_softmax(probs, bh * s.seq, s.seq, stream);
  batched_gemm(handle, false, false, s.seq, s.head_dim, s.seq, 1.0f, probs, ss, sc.v, sd, sc.x, sd, bh, "O = P V");
  unpack(sc.x, out, s.heads * s.head_dim, 0, 1, s.heads, s, stream);
}

void unfused_attention_backward(void* blas, const bf16* dout, const bf16* qkv, const bf16* probs, bf16* dqkv, void* scratch,
                                const AttentionShape& s, cudaStream_t stream) {
  check_shape(s);
  auto handle = static_cast<cublasHandle_t>(blas);
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  const Scratch sc(scratch, s);
  const int64_t bh = s.batch * s.heads, sd = s.seq * s.head_dim, ss = s.seq * s.seq, d = s.head_dim;
  const int64_t stride = (s.heads + 2 * s.kv_heads) * d, group = s.heads / s.kv_heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  pack_qkv(qkv, sc, s, stream);
  pack(dout, s.heads * d, 0, 1, sc.x, s, stream);
  batched_gemm(handle, true, false, s.seq, d, s.seq, 1.0f, probs, ss, sc.x, sd, sc.dv, sd, bh, "dV = P^T dO");
  batched_gemm(handle, false, true, s.seq, s.seq, d, 1.0f, sc.x, sd, sc.v, sd, sc.ds, ss, bh, "dP = dO V^T");
  causal_softmax_backward_kernel<<<static_cast<unsigned>(bh * s.seq), kSoftmaxThreads, 0, stream>>>(probs, sc.ds, s.seq,
                                                                                                    scale);
  check_launch("unfused attention: softmax backward");
  batched_gemm(handle, false, false, s.seq, d, s.seq, 1.0f, sc.ds, ss, sc.k, sd, sc.dq, sd, bh, "dQ = dS K");
  batched_gemm(handle, true, false, s.seq, d, s.seq, 1.0f, sc.ds, ss, sc.q, sd, sc.dk, sd, bh, "dK = dS^T Q");
  unpack(sc.dq, dqkv, stride, 0, 1, s.heads, s, stream);
  unpack(sc.dk, dqkv, stride, s.heads * d, group, s.kv_heads, s, stream);
  unpack(sc.dv, dqkv, stride, (s.heads + s.kv_heads) * d, group, s.kv_heads, s, stream);
}

}  // namespace trainsim::cuda
