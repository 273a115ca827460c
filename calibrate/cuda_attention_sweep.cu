// Times and checks attention forward (see cuda_attention_sweep.cuh). First both kernels are checked
// on every row of a small case against the naive reference; then every timed point is checked on
// four rows (first and last queries of the first and last batch-head, row 0 attending to key 0
// alone when causal). Q, K, V sets rotate through an arena larger than twice the L2.
#include "calibrate/cuda_attention_sweep.cuh"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "calibrate/cuda_fill.cuh"
#include "calibrate/cuda_flash_attention.cuh"
#include "calibrate/cuda_memory_kernels.cuh"
#include "common/errors.hpp"

namespace trainsim {

namespace {

constexpr const char* kFlashKernel = "trainsim-flash-v1";
constexpr const char* kUnfusedKernel = "unfused-cublas";
// |o - reference| / |reference| per row (L2 norms over head_dim). bf16 rounding of scores (unfused
// only, up to 1.6 % of a probability for scores of 4..8), of probabilities and of the output gives
// about 1 %; a wrong mask or layout gives tens of percent (row 0 with a causal mask: 70 % or more).
constexpr double kMaxRowError = 5e-2;

struct Shape {
  int64_t batch_heads, seq, head_dim;
  bool causal;
};

std::string describe(const char* kernel, const Shape& s) {
  char text[128];
  std::snprintf(text, sizeof text, "%s batch_heads=%lld seq=%lld head_dim=%lld%s", kernel,
                static_cast<long long>(s.batch_heads), static_cast<long long>(s.seq),
                static_cast<long long>(s.head_dim), s.causal ? " causal" : "");
  return text;
}

struct Buffers {
  DeviceBuffer arena;   // rotated (Q, K, V) sets
  DeviceBuffer scores;  // unfused: (batch_heads, seq, seq) bf16, softmax in place
  DeviceBuffer out;     // O
  DeviceBuffer rows;    // checked rows (flat indices)
  DeviceBuffer reference;
};

size_t tensor_bytes(const Shape& s) { return align_up(static_cast<size_t>(s.batch_heads * s.seq * s.head_dim) * 2); }

void run_unfused(const GpuContext& context, const Shape& s, const __nv_bfloat16* q, const __nv_bfloat16* k,
                 const __nv_bfloat16* v, __nv_bfloat16* scores, __nv_bfloat16* o) {
  const int seq = static_cast<int>(s.seq), d = static_cast<int>(s.head_dim), heads = static_cast<int>(s.batch_heads);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim))), one = 1.0f, zero = 0.0f;
  // Column-major view: scores (seq_k, seq_q) = K . Q^T, which is row-major S[query][key].
  cublasStatus_t status = cublasGemmStridedBatchedEx(
      context.blas, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, d, &scale, k, CUDA_R_16BF, d, s.seq * s.head_dim, q,
      CUDA_R_16BF, d, s.seq * s.head_dim, &zero, scores, CUDA_R_16BF, seq, s.seq * s.seq, heads, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) check_cublas(status, "cuBLAS Q K^T for " + describe(kUnfusedKernel, s));
  launch_softmax(scores, scores, s.batch_heads * s.seq, s.seq, s.causal ? s.seq : 0, context.stream);
  // Column-major view: O^T (d, seq_q) = V^T (d, seq_k) . P^T (seq_k, seq_q).
  status = cublasGemmStridedBatchedEx(context.blas, CUBLAS_OP_N, CUBLAS_OP_N, d, seq, seq, &one, v, CUDA_R_16BF, d,
                                      s.seq * s.head_dim, scores, CUDA_R_16BF, seq, s.seq * s.seq, &zero, o,
                                      CUDA_R_16BF, d, s.seq * s.head_dim, heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) check_cublas(status, "cuBLAS P V for " + describe(kUnfusedKernel, s));
}

void run(const GpuContext& context, bool fused, const Shape& s, const char* set, Buffers& b) {
  const auto* q = reinterpret_cast<const __nv_bfloat16*>(set);
  const auto* k = reinterpret_cast<const __nv_bfloat16*>(set + tensor_bytes(s));
  const auto* v = reinterpret_cast<const __nv_bfloat16*>(set + 2 * tensor_bytes(s));
  if (fused) {
    launch_flash_attention(q, k, v, b.out.as<__nv_bfloat16>(), s.batch_heads, s.seq, s.head_dim, s.causal,
                           context.stream);
  } else {
    run_unfused(context, s, q, k, v, b.scores.as<__nv_bfloat16>(), b.out.as<__nv_bfloat16>());
  }
}

// Runs once on set 0 and compares the given rows with the reference (relative L2 error per row).
void check(const GpuContext& context, bool fused, const Shape& s, Buffers& b, const std::vector<int64_t>& rows) {
  const char* set = b.arena.bytes_ptr();
  const auto* q = reinterpret_cast<const __nv_bfloat16*>(set);
  const auto* k = reinterpret_cast<const __nv_bfloat16*>(set + tensor_bytes(s));
  const auto* v = reinterpret_cast<const __nv_bfloat16*>(set + 2 * tensor_bytes(s));
  const size_t d = static_cast<size_t>(s.head_dim);
  run(context, fused, s, set, b);
  check_cuda(cudaMemcpyAsync(b.rows.get(), rows.data(), rows.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                             context.stream),
             "copying attention check rows");
  launch_attention_reference(q, k, v, b.rows.as<int64_t>(), static_cast<int64_t>(rows.size()), b.reference.as<float>(),
                             s.seq, s.head_dim, s.causal, context.stream);
  std::vector<float> reference(rows.size() * d);
  check_cuda(cudaMemcpyAsync(reference.data(), b.reference.get(), reference.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, context.stream),
             "reading the attention reference");
  check_cuda(cudaStreamSynchronize(context.stream), "checking " + describe(fused ? kFlashKernel : kUnfusedKernel, s));
  std::vector<__nv_bfloat16> got(d);
  for (size_t r = 0; r < rows.size(); ++r) {
    check_cuda(cudaMemcpy(got.data(), b.out.as<__nv_bfloat16>() + rows[r] * s.head_dim, d * 2, cudaMemcpyDeviceToHost),
               "reading an attention output row");
    double error = 0, norm = 0;
    for (size_t c = 0; c < d; ++c) {
      const double want = reference[r * d + c], diff = __bfloat162float(got[c]) - want;
      error += diff * diff;
      norm += want * want;
    }
    const double relative = std::sqrt(error / norm);
    if (!(relative <= kMaxRowError)) {  // also catches NaN
      char text[128];
      std::snprintf(text, sizeof text, ": output row %lld is off the reference by %.3g (relative L2; allowed %.3g)",
                    static_cast<long long>(rows[r]), relative, kMaxRowError);
      throw DeviceError("wrong result from " + describe(fused ? kFlashKernel : kUnfusedKernel, s) + text +
                        "\nHINT: this is a bug in calibrate/cuda_flash_attention.cu or cuda_attention_sweep.cu");
    }
  }
}

std::vector<Shape> shapes(bool quick) {
  std::vector<Shape> result;
  const std::vector<int64_t> heads = quick ? std::vector<int64_t>{32} : std::vector<int64_t>{16, 64};
  const std::vector<int64_t> seqs = quick ? std::vector<int64_t>{1024, 4096}
                                          : std::vector<int64_t>{512, 1024, 2048, 4096, 8192};
  const std::vector<bool> causal = quick ? std::vector<bool>{true} : std::vector<bool>{true, false};
  for (const bool c : causal)
    for (const int64_t h : heads)
      for (const int64_t seq : seqs)
        for (const int64_t d : {int64_t{64}, int64_t{128}}) result.push_back({h, seq, d, c});
  return result;
}

}  // namespace

std::vector<AttentionTable> measure_attention(const GpuContext& context, bool quick) {
  const std::vector<Shape> shape_list = shapes(quick);
  size_t largest_set = 0, largest_scores = 0, largest_out = 0;
  for (const Shape& s : shape_list) {
    largest_set = std::max(largest_set, 3 * tensor_bytes(s));
    largest_scores = std::max(largest_scores, static_cast<size_t>(s.batch_heads * s.seq * s.seq) * 2);
    largest_out = std::max(largest_out, tensor_bytes(s));
  }
  constexpr int64_t kSmallSeq = 256, kSmallHeads = 2;
  Buffers b{DeviceBuffer(largest_set + 2 * context.l2_bytes, "attention inputs"),
            DeviceBuffer(largest_scores, "unfused attention scores"), DeviceBuffer(largest_out, "attention outputs"),
            DeviceBuffer(kSmallSeq * kSmallHeads * sizeof(int64_t), "attention check rows"),
            DeviceBuffer(kSmallSeq * kSmallHeads * 128 * sizeof(float), "attention reference rows")};
  fill_uniform(ElementType::bf16, b.arena.get(), b.arena.bytes() / 2, 31, -2.0f, 2.0f, context.stream);

  std::vector<int64_t> all_rows;
  for (int64_t r = 0; r < kSmallSeq * kSmallHeads; ++r) all_rows.push_back(r);
  for (const bool causal : {true, false}) {
    for (const int64_t d : {int64_t{64}, int64_t{128}}) {
      for (const bool fused : {true, false}) check(context, fused, {kSmallHeads, kSmallSeq, d, causal}, b, all_rows);
    }
  }
  context.say("attention: both kernels match the reference on every row of a small case");

  std::vector<AttentionTable> tables(2);
  tables[0].dtype = tables[1].dtype = "bf16";
  tables[0].kernel = kFlashKernel;
  tables[1].kernel = kUnfusedKernel;
  for (const Shape& s : shape_list) {
    const size_t set = 3 * tensor_bytes(s);
    const int64_t sets = context.rotation_sets(set, b.arena.bytes());
    const std::vector<int64_t> rows = {0, s.seq - 1, (s.batch_heads - 1) * s.seq + s.seq / 2,
                                       s.batch_heads * s.seq - 1};
    for (const bool fused : {true, false}) {
      AttentionPoint point;
      point.batch_heads = s.batch_heads;
      point.seq = s.seq;
      point.head_dim = s.head_dim;
      point.causal = s.causal;
      point.timing = context.time_calls(
          [&](int64_t call) { run(context, fused, s, b.arena.bytes_ptr() + static_cast<size_t>(call % sets) * set, b); });
      check(context, fused, s, b, rows);
      tables[fused ? 0 : 1].points.push_back(point);
    }
    char line[192];
    std::snprintf(line, sizeof line, "attention batch_heads=%lld seq=%lld head_dim=%lld%s: fused %.3f ms, unfused %.3f ms",
                  static_cast<long long>(s.batch_heads), static_cast<long long>(s.seq),
                  static_cast<long long>(s.head_dim), s.causal ? " causal" : "",
                  tables[0].points.back().timing.median_s * 1e3,
                  tables[1].points.back().timing.median_s * 1e3);
    context.say(line);
  }
  return tables;
}

}  // namespace trainsim
