// One cuBLASLt matmul D (m x n) = A (m x k) . B (k x n) for one GEMM dtype, planned once and run
// many times. Layout "TN", the one fp8 requires and used for every dtype alike: A is stored k-major
// (column-major k x m, lda = k, transposed by the op), B column-major k x n (ldb = k), D
// column-major m x n (ldd = m). bf16 runs through the runtime's own Gemm
// (kernels/cuda/gemm.cuh, in its row-major terms D^T (n x m) = B^T . A^T, the form of its
// input-gradient GEMMs), so the sweep times what the runtime runs; Gemm takes bf16 inputs only, so fp16, tf32
// and fp8 keep a plan of their own here (descriptors plus the heuristic's first algorithm for the
// context's workspace). Used by the GEMM sweep and the GEMM-beside-collective test.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "calibrate/cuda_context.cuh"
#include "calibrate/cuda_fill.cuh"

namespace trainsim {

// bf16 and fp16: 16-bit in and out. tf32: fp32 in and out, TF32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32). fp8: e4m3 in, bf16 out. All accumulate in fp32.
enum class GemmDtype { bf16, fp16, tf32, fp8 };

const char* gemm_dtype_name(GemmDtype dtype);
ElementType gemm_input_type(GemmDtype dtype);
ElementType gemm_output_type(GemmDtype dtype);

class LtMatmul {
 public:
  LtMatmul(const GpuContext& context, GemmDtype dtype, int64_t m, int64_t n, int64_t k);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  void run(const void* a, const void* b, void* d, cudaStream_t stream) const;
  std::string describe() const;  // "bf16 GEMM m=4096 n=8192 k=1024"
  GemmDtype dtype() const { return dtype_; }
  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }

 private:
  void plan();
  void destroy() noexcept;

  const GpuContext& context_;
  GemmDtype dtype_;
  int64_t m_, n_, k_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace trainsim
