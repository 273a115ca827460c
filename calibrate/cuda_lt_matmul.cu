// cuBLASLt matmul planning and launch for the GEMM dtypes (see cuda_lt_matmul.cuh): bf16 handed to
// the runtime's Gemm (which plans on first use), the others planned here: types per dtype, the TN
// layout, the heuristic's first algorithm within the context's workspace. A dtype/shape cuBLASLt
// cannot run is a DeviceError naming it, never a skipped point.
#include "calibrate/cuda_lt_matmul.cuh"

#include <cuda_bf16.h>

#include "common/errors.hpp"

namespace trainsim {

namespace {

cudaDataType_t cuda_type(ElementType type) {
  switch (type) {
    case ElementType::bf16: return CUDA_R_16BF;
    case ElementType::fp16: return CUDA_R_16F;
    case ElementType::fp32: return CUDA_R_32F;
    case ElementType::fp8_e4m3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

cublasComputeType_t compute_type(GemmDtype dtype) {
  return dtype == GemmDtype::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace

const char* gemm_dtype_name(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16: return "bf16";
    case GemmDtype::fp16: return "fp16";
    case GemmDtype::tf32: return "tf32";
    case GemmDtype::fp8: return "fp8";
  }
  return "?";
}

ElementType gemm_input_type(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16: return ElementType::bf16;
    case GemmDtype::fp16: return ElementType::fp16;
    case GemmDtype::tf32: return ElementType::fp32;
    case GemmDtype::fp8: return ElementType::fp8_e4m3;
  }
  return ElementType::fp32;
}

ElementType gemm_output_type(GemmDtype dtype) {
  return dtype == GemmDtype::fp8 ? ElementType::bf16 : gemm_input_type(dtype);
}

LtMatmul::LtMatmul(const GpuContext& context, GemmDtype dtype, int64_t m, int64_t n, int64_t k)
    : context_(context), dtype_(dtype), m_(m), n_(n), k_(k) {
  if (dtype_ == GemmDtype::bf16) return;  // the runtime's Gemm plans it
  try {
    plan();
  } catch (...) {
    destroy();
    throw;
  }
}

void LtMatmul::plan() {
  const std::string what = describe();
  const cudaDataType_t in = cuda_type(gemm_input_type(dtype_));
  const cudaDataType_t out = cuda_type(gemm_output_type(dtype_));
  check_cublas(cublasLtMatmulDescCreate(&op_, compute_type(dtype_), CUDA_R_32F), "cublasLtMatmulDescCreate for " + what);
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
               "setting TRANSA for " + what);
  check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep),
               "setting TRANSB for " + what);
  if (dtype_ == GemmDtype::fp8) {
    const int8_t fast_accumulation = 0;  // keep cuBLASLt's periodic promotion to fp32
    check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accumulation,
                                                sizeof fast_accumulation),
                 "setting FAST_ACCUM for " + what);
  }
  check_cublas(cublasLtMatrixLayoutCreate(&a_, in, static_cast<uint64_t>(k_), static_cast<uint64_t>(m_), k_),
               "cublasLtMatrixLayoutCreate(A) for " + what);
  check_cublas(cublasLtMatrixLayoutCreate(&b_, in, static_cast<uint64_t>(k_), static_cast<uint64_t>(n_), k_),
               "cublasLtMatrixLayoutCreate(B) for " + what);
  check_cublas(cublasLtMatrixLayoutCreate(&d_, out, static_cast<uint64_t>(m_), static_cast<uint64_t>(n_), m_),
               "cublasLtMatrixLayoutCreate(D) for " + what);

  cublasLtMatmulPreference_t preference = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace_bytes = context_.workspace.bytes();
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(context_.lt, op_, a_, b_, d_, d_, preference, 1, &result, &returned);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic for " + what);
  if (returned == 0) {
    throw DeviceError("cuBLASLt has no algorithm for " + what +
                      "\nHINT: leave this dtype out (--dtypes) or report the GPU and cuBLAS version");
  }
  algo_ = result.algo;
}

LtMatmul::~LtMatmul() { destroy(); }

void LtMatmul::destroy() noexcept {
  if (d_ != nullptr) cublasLtMatrixLayoutDestroy(d_);
  if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
  if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
  if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  a_ = b_ = d_ = nullptr;
  op_ = nullptr;
}

void LtMatmul::run(const void* a, const void* b, void* d, cudaStream_t stream) const {
  if (dtype_ == GemmDtype::bf16) {  // row-major D^T (n x m) = B^T (stored n x k) . A^T (A stored m x k)
    context_.gemm->matmul(static_cast<const __nv_bfloat16*>(b), false, static_cast<const __nv_bfloat16*>(a), true, d,
                          cuda::OutputType::kBf16, n_, m_, k_, 1.0f, 0.0f, stream);
    return;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status = cublasLtMatmul(context_.lt, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_,
                                               context_.workspace.bytes_ptr(), context_.workspace.bytes(), stream);
  if (status != CUBLAS_STATUS_SUCCESS) check_cublas(status, "cublasLtMatmul for " + describe());
}

std::string LtMatmul::describe() const {
  return std::string(gemm_dtype_name(dtype_)) + " GEMM m=" + std::to_string(m_) + " n=" + std::to_string(n_) +
         " k=" + std::to_string(k_);
}

}  // namespace trainsim
