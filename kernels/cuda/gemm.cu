// The row-major cuBLASLt GEMM of gemm.cuh. cuBLASLt is column-major; a row-major (r x c) matrix is
// its column-major transpose, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: cuBLASLt's
// A is our B and its B is our A, with the transposes kept. bf16 A/B, fp32 compute and scale,
// C/D bf16 or fp32 (C is D: beta = 1 accumulates into fp32 weight gradients). One plan per
// (transposes, output type, m, n, k, alignment); a shape with no algorithm is a DeviceError naming it.
#include "kernels/cuda/gemm.cuh"

#include <string>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

struct Gemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A), C = D
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

namespace {

std::string describe(const std::tuple<bool, bool, int, int64_t, int64_t, int64_t, int>& key) {
  const auto& [ta, tb, c_type, m, n, k, alignment] = key;
  return std::string("row-major GEMM ") + (ta ? "A^T" : "A") + " . " + (tb ? "B^T" : "B") + " m=" + std::to_string(m) +
         " n=" + std::to_string(n) + " k=" + std::to_string(k) + " (bf16 in, " +
         (c_type == static_cast<int>(OutputType::kFp32) ? "fp32" : "bf16") + " out, " + std::to_string(alignment) +
         "-byte aligned)";
}

int alignment_of(const void* a, const void* b, const void* c) {
  const auto bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(c);
  return bits % 256 == 0 ? 256 : (bits % 16 == 0 ? 16 : 2);
}

}  // namespace

Gemm::Gemm(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
  try {
    check_cuda(cudaMalloc(&workspace_, workspace_bytes_), "cudaMalloc(" + std::to_string(workspace_bytes_ >> 20) +
                                                              " MiB for the cuBLASLt workspace)");
  } catch (...) {
    cublasLtDestroy(handle_);
    throw;
  }
}

Gemm::~Gemm() {
  plans_.clear();
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

Gemm::Plan& Gemm::plan(const Key& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  const auto& [ta, tb, c_type, m, n, k, alignment] = key;
  const std::string what = describe(key);
  auto p = std::make_unique<Plan>();
  check_cublas(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate for " + what);
  const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "TRANSA for " + what);
  check_cublas(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "TRANSB for " + what);
  // Stored column-major shapes: our B is (k x n) row-major = (n x k) column-major, or (n x k)
  // row-major = (k x n) column-major when transposed; likewise our A with m.
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  check_cublas(tb ? cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, u(k), u(n), k)
                  : cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, u(n), u(k), n),
               "cublasLtMatrixLayoutCreate(B) for " + what);
  check_cublas(ta ? cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, u(m), u(k), m)
                  : cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, u(k), u(m), k),
               "cublasLtMatrixLayoutCreate(A) for " + what);
  const cudaDataType_t out = c_type == static_cast<int>(OutputType::kFp32) ? CUDA_R_32F : CUDA_R_16BF;
  check_cublas(cublasLtMatrixLayoutCreate(&p->c, out, u(n), u(m), n), "cublasLtMatrixLayoutCreate(C) for " + what);

  cublasLtMatmulPreference_t preference = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  const uint32_t align = static_cast<uint32_t>(alignment);
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace_bytes_, sizeof workspace_bytes_);
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &align, sizeof align);
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->c, p->c, preference, 1, &result, &found_count);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic for " + what);
  if (found_count == 0) check_cublas(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulAlgoGetHeuristic found no algorithm for " + what);
  p->algo = result.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Gemm::matmul(const __nv_bfloat16* a, bool transpose_a, const __nv_bfloat16* b, bool transpose_b, void* c,
                  OutputType c_type, int64_t m, int64_t n, int64_t k, float alpha, float beta, cudaStream_t stream) {
  TRAINSIM_ASSERT(m > 0 && n > 0 && k > 0, "a GEMM needs positive m, n and k");
  const Key key{transpose_a, transpose_b, static_cast<int>(c_type), m, n, k, alignment_of(a, b, c)};
  Plan& p = plan(key);
  // C^T = op(B)^T op(A)^T: cuBLASLt's A is b, its B is a.
  const cublasStatus_t status = cublasLtMatmul(handle_, p.op, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c, &p.algo,
                                               workspace_, workspace_bytes_, stream);
  if (status != CUBLAS_STATUS_SUCCESS) check_cublas(status, "cublasLtMatmul for " + describe(key));  // message only on failure
}

}  // namespace trainsim::cuda
