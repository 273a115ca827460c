// Row-major GEMMs for the CUDA backend through cuBLASLt: bf16 inputs, fp32 accumulation, bf16 or
// fp32 output. C (m x n) = alpha * op(A) (m x k) . op(B) (k x n) + beta * C, where op transposes
// when asked; all matrices row-major and contiguous (leading dimension = columns as stored).
// Plans (descriptors + the heuristic's first algorithm) are cached by shape.
//   forward      y  (T x out) = x (T x in) . W (in x out)            bf16 out, beta 0
//   input grad   dx (T x in)  = dy (T x out) . W^T                    bf16 out, beta 0
//   weight grad  dW (in x out) += x^T (in x T) . dy (T x out)         fp32 out, beta 1
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace trainsim::cuda {

enum class OutputType { kBf16, kFp32 };

class Gemm {
 public:
  explicit Gemm(size_t workspace_bytes = 32u << 20);  // on the current device
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  void matmul(const __nv_bfloat16* a, bool transpose_a, const __nv_bfloat16* b, bool transpose_b, void* c, OutputType c_type,
              int64_t m, int64_t n, int64_t k, float alpha, float beta, cudaStream_t stream);

 private:
  struct Plan;
  // (transpose_a, transpose_b, c_type, m, n, k, pointer alignment in bytes: 16 or 256)
  using Key = std::tuple<bool, bool, int, int64_t, int64_t, int64_t, int>;
  Plan& plan(const Key& key);
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace trainsim::cuda
