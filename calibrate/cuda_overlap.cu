// GEMM slowdown beside an all-reduce (see cuda_overlap.cuh). For each "with" sample, enough
// all-reduces to outlast the GEMM three times over are enqueued on the NCCL streams first, then
// the GEMM on the context's stream of GPU 0 between CUDA events; the sample ends when all work has
// drained. Only GPU 0 runs the GEMM (the other ranks only communicate). Afterwards the GEMM and
// the all-reduce results are checked as in their own sweeps.
#include "calibrate/cuda_overlap.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "calibrate/cuda_fill.cuh"
#include "calibrate/cuda_gemm_sweep.cuh"
#include "calibrate/cuda_lt_matmul.cuh"

namespace trainsim {

namespace {
constexpr int64_t kGemmSize = 8192;                      // m = n = k
constexpr size_t kAllReduceBytes = size_t{256} << 20;    // 256 MiB
constexpr double kCoverage = 3.0;                        // all-reduce time per sample / GEMM time
constexpr int kMaxAllReducesPerSample = 64;
}  // namespace

OverlapPoint measure_gemm_beside_all_reduce(const GpuContext& context, const NcclGroup& group) {
  const size_t matrix_bytes = static_cast<size_t>(kGemmSize * kGemmSize) * 2;
  DeviceBuffer a(matrix_bytes, "overlap GEMM A"), b(matrix_bytes, "overlap GEMM B"), d(matrix_bytes, "overlap GEMM D");
  // Full-mantissa inputs, as the GEMM sweep times (cuda_fill.cuh: low-entropy data runs faster).
  fill_uniform(ElementType::bf16, a.get(), matrix_bytes / 2, 41, -1.0f, 1.0f, context.stream);
  fill_uniform(ElementType::bf16, b.get(), matrix_bytes / 2, 42, -1.0f, 1.0f, context.stream);
  const LtMatmul matmul(context, GemmDtype::bf16, kGemmSize, kGemmSize, kGemmSize);
  auto gemm = [&](int64_t) { matmul.run(a.get(), b.get(), d.get(), context.stream); };

  const size_t all_reduce_bytes = std::min(kAllReduceBytes, group.buffer_bytes());
  fill_send_buffers(group, Collective::all_reduce);
  const Timing alone = context.time_calls(gemm);
  const double all_reduce_s = time_collective_s(context, group, Collective::all_reduce, all_reduce_bytes);
  const int all_reduces = std::clamp(static_cast<int>(std::ceil(kCoverage * alone.median_s / all_reduce_s)), 1,
                                     kMaxAllReducesPerSample);

  EventPair events;
  auto beside = [&] {
    for (int i = 0; i < all_reduces; ++i) group.enqueue(Collective::all_reduce, all_reduce_bytes);
    check_cuda(cudaSetDevice(context.device), "cudaSetDevice");
    events.record_start(context.stream);
    gemm(0);
    events.record_stop(context.stream);
    const double elapsed = events.wait_elapsed_s();
    group.synchronize();
    return elapsed;
  };
  const Timing with = sample_until_stable(beside, context.sampler);
  check_received(group, Collective::all_reduce, all_reduce_bytes);
  check_gemm(context, matmul, a.get(), b.get(), d.get());

  OverlapPoint point;
  point.collective = collective_name(Collective::all_reduce);
  point.gemm_slowdown = with.median_s / alone.median_s;
  char line[160];
  std::snprintf(line, sizeof line, "overlap: bf16 8192^3 GEMM %.3f ms alone, %.3f ms beside a %s all-reduce (x%.2f)",
                alone.median_s * 1e3, with.median_s * 1e3, format_bytes(static_cast<double>(all_reduce_bytes)).c_str(),
                point.gemm_slowdown);
  context.say(line);
  return point;
}

}  // namespace trainsim
