// GEMM sweep with cuBLASLt (see cuda_gemm_sweep.cuh). Inputs are uniform in [-1, 1) with a full
// mantissa in their dtype: the rate of real training data, not the faster one of low-entropy values
// (cuda_fill.cuh). The reference kernel takes fp64 dot products over the stored inputs, so only
// the GPU's accumulation and output rounding are tolerated; buffers rotate through an arena larger
// than twice the L2. A wrong entry is a DeviceError, never a data point.
#include "calibrate/cuda_gemm_sweep.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/errors.hpp"

namespace trainsim {

namespace {

constexpr int kCheckedEntries = 48;
constexpr int kReferenceThreads = 256;
constexpr double kUsableFreeMemory = 0.85;

// Allowed |D - reference| per unit of (|reference| + sqrt(sum_k (a_k b_k)^2)). Products of 16-bit
// and fp8 inputs are exact in fp32 and their fp32 sums err by about sqrt(k) 2^-24 in these units,
// so the error is the output's rounding (bf16 2^-9, fp16 2^-11) plus, when cuBLASLt splits k, the
// rounding of the partial sums in the output type; tf32 rounds its fp32 inputs to 10 mantissa bits
// (about 2^-11); fp8 also accumulates with less precision. A wrong layout or garbage is off by about
// 1 in these units.
double tolerance(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16: return 1.0 / 32;
    case GemmDtype::fp16: return 1.0 / 128;
    case GemmDtype::tf32: return 1.0 / 128;
    case GemmDtype::fp8: return 1.0 / 16;
  }
  return 0;
}

// One block per checked entry (i, j): D(i, j) as stored, the fp64 dot product of A's column i
// and B's column j (both k-major), and the root-sum-square of the products as the error scale.
template <class TIn, class TOut>
__global__ void gemm_reference_kernel(const TIn* a, const TIn* b, const TOut* d, int64_t m, int64_t k,
                                      const int64_t* entries, double* out) {
  __shared__ double sum[kReferenceThreads], sum_sq[kReferenceThreads];
  const int64_t i = entries[2 * blockIdx.x], j = entries[2 * blockIdx.x + 1];
  double acc = 0, acc_sq = 0;
  for (int64_t kk = threadIdx.x; kk < k; kk += blockDim.x) {
    const double p = static_cast<double>(static_cast<float>(a[i * k + kk])) *
                     static_cast<double>(static_cast<float>(b[j * k + kk]));
    acc += p;
    acc_sq += p * p;
  }
  sum[threadIdx.x] = acc;
  sum_sq[threadIdx.x] = acc_sq;
  __syncthreads();
  for (int stride = kReferenceThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) {
      sum[threadIdx.x] += sum[threadIdx.x + stride];
      sum_sq[threadIdx.x] += sum_sq[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x] = static_cast<double>(static_cast<float>(d[j * m + i]));
    out[3 * blockIdx.x + 1] = sum[0];
    out[3 * blockIdx.x + 2] = sqrt(sum_sq[0]);
  }
}

void launch_reference(GemmDtype dtype, const void* a, const void* b, const void* d, int64_t m, int64_t k,
                      const int64_t* entries, double* out, cudaStream_t stream) {
  const dim3 grid(kCheckedEntries), block(kReferenceThreads);
  switch (dtype) {
    case GemmDtype::bf16:
      gemm_reference_kernel<<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(a),
                                                        static_cast<const __nv_bfloat16*>(b),
                                                        static_cast<const __nv_bfloat16*>(d), m, k, entries, out);
      break;
    case GemmDtype::fp16:
      gemm_reference_kernel<<<grid, block, 0, stream>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                                        static_cast<const __half*>(d), m, k, entries, out);
      break;
    case GemmDtype::tf32:
      gemm_reference_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(a), static_cast<const float*>(b),
                                                        static_cast<const float*>(d), m, k, entries, out);
      break;
    case GemmDtype::fp8:
      gemm_reference_kernel<<<grid, block, 0, stream>>>(static_cast<const __nv_fp8_e4m3*>(a),
                                                        static_cast<const __nv_fp8_e4m3*>(b),
                                                        static_cast<const __nv_bfloat16*>(d), m, k, entries, out);
      break;
  }
  check_cuda(cudaGetLastError(), "launching the GEMM reference kernel");
}

// The four corners, then pseudo-random entries (a fixed LCG, so runs check the same entries).
std::vector<int64_t> checked_entries(int64_t m, int64_t n) {
  std::vector<int64_t> entries = {0, 0, m - 1, n - 1, m - 1, 0, 0, n - 1};
  uint64_t state = 0x2545F4914F6CDD1Dull ^ static_cast<uint64_t>(m * 131 + n);
  while (entries.size() < 2 * kCheckedEntries) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    entries.push_back(static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(m)));
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    entries.push_back(static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(n)));
  }
  return entries;
}

struct GemmMemory {
  size_t arena_bytes = 0, d_bytes = 0;
};

size_t set_bytes(int64_t m, int64_t n, int64_t k, size_t in) {
  return align_up(static_cast<size_t>(m * k) * in) + align_up(static_cast<size_t>(k * n) * in);
}

GemmMemory memory_for(const GemmGrid& grid, GemmDtype dtype, size_t l2_bytes) {
  const size_t in = element_bytes(gemm_input_type(dtype)), out = element_bytes(gemm_output_type(dtype));
  GemmMemory memory;
  memory.arena_bytes = set_bytes(grid.m_values.back(), grid.n_values.back(), grid.k_values.back(), in) + 2 * l2_bytes;
  memory.d_bytes = align_up(static_cast<size_t>(grid.m_values.back() * grid.n_values.back()) * out);
  return memory;
}

// Drops the largest value of the largest dimension (k, then n, then m on ties) until it fits.
bool trim_to_memory(GemmGrid& grid, GemmDtype dtype, size_t l2_bytes, double usable_bytes) {
  bool trimmed = false;
  for (;;) {
    const GemmMemory memory = memory_for(grid, dtype, l2_bytes);
    if (static_cast<double>(memory.arena_bytes + memory.d_bytes) <= usable_bytes) return trimmed;
    std::vector<int64_t>* largest = &grid.k_values;
    if (grid.n_values.back() > largest->back()) largest = &grid.n_values;
    if (grid.m_values.back() > largest->back()) largest = &grid.m_values;
    if (largest->size() == 1) {
      throw DeviceError(std::string("gemm ") + gemm_dtype_name(dtype) + ": even the smallest grid needs " +
                        format_bytes(static_cast<double>(memory.arena_bytes + memory.d_bytes)) + " of GPU memory, " +
                        format_bytes(usable_bytes) + " usable\nHINT: free GPU memory (see nvidia-smi)");
    }
    largest->pop_back();
    trimmed = true;
  }
}

}  // namespace

void check_gemm(const GpuContext& context, const LtMatmul& matmul, const void* a, const void* b, void* d) {
  const int64_t m = matmul.m(), n = matmul.n(), k = matmul.k();
  const std::vector<int64_t> entries = checked_entries(m, n);
  std::vector<double> out(3 * kCheckedEntries);
  DeviceBuffer entries_device(entries.size() * sizeof(int64_t), "GEMM check entries");
  DeviceBuffer out_device(out.size() * sizeof(double), "GEMM check results");
  check_cuda(cudaMemcpyAsync(entries_device.get(), entries.data(), entries.size() * sizeof(int64_t),
                             cudaMemcpyHostToDevice, context.stream),
             "copying GEMM check entries");
  matmul.run(a, b, d, context.stream);
  launch_reference(matmul.dtype(), a, b, d, m, k, entries_device.as<int64_t>(), out_device.as<double>(),
                   context.stream);
  check_cuda(cudaMemcpyAsync(out.data(), out_device.get(), out.size() * sizeof(double), cudaMemcpyDeviceToHost,
                             context.stream),
             "copying GEMM check results");
  check_cuda(cudaStreamSynchronize(context.stream), "checking " + matmul.describe());
  for (int e = 0; e < kCheckedEntries; ++e) {
    const double got = out[3 * e], reference = out[3 * e + 1], scale = out[3 * e + 2];
    const double allowed = tolerance(matmul.dtype()) * (std::fabs(reference) + scale);
    if (!(std::fabs(got - reference) <= allowed)) {  // also catches NaN
      char text[256];
      std::snprintf(text, sizeof text, ": D(%lld, %lld) is %.6g, the reference %.6g (allowed error %.3g)",
                    static_cast<long long>(entries[2 * e]), static_cast<long long>(entries[2 * e + 1]), got,
                    reference, allowed);
      throw DeviceError("wrong result from " + matmul.describe() + text +
                        "\nHINT: rerun; if it repeats, check the GPU (nvidia-smi -q for ECC errors) and the "
                        "cuBLAS install");
    }
  }
}

GemmGrid gemm_grid(bool quick) {
  if (quick) return {{1024, 4096, 16384}, {256, 1024, 4096, 16384}, {256, 1024, 4096, 16384}};
  GemmGrid grid;
  grid.m_values = {1024, 2048, 4096, 8192, 16384, 32768};
  for (int64_t v = 256; v <= 65536; v *= 2) grid.n_values.push_back(v);
  grid.k_values = grid.n_values;
  return grid;
}

GemmTable measure_gemm_table(const GpuContext& context, GemmDtype dtype, GemmGrid grid,
                             std::vector<std::string>& notes) {
  const std::string name = gemm_dtype_name(dtype);
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const double usable = kUsableFreeMemory * static_cast<double>(free_bytes);
  if (trim_to_memory(grid, dtype, context.l2_bytes, usable)) {
    notes.push_back("gemm " + name + ": grid trimmed to fit " + format_bytes(usable) + " of GPU memory (largest m " +
                    std::to_string(grid.m_values.back()) + ", n " + std::to_string(grid.n_values.back()) + ", k " +
                    std::to_string(grid.k_values.back()) + ")");
  }
  const size_t in = element_bytes(gemm_input_type(dtype));
  const GemmMemory memory = memory_for(grid, dtype, context.l2_bytes);
  DeviceBuffer arena(memory.arena_bytes, "GEMM inputs");
  DeviceBuffer d(memory.d_bytes, "GEMM outputs");
  fill_uniform(gemm_input_type(dtype), arena.bytes_ptr(), arena.bytes() / in, static_cast<uint64_t>(dtype) + 1, -1.0f,
               1.0f, context.stream);

  GemmTable table;
  table.dtype = name;
  table.m_values = grid.m_values;
  table.n_values = grid.n_values;
  table.k_values = grid.k_values;
  const size_t total = grid.m_values.size() * grid.n_values.size() * grid.k_values.size();
  for (const int64_t m : grid.m_values) {
    double best_flops = 0;
    for (const int64_t n : grid.n_values) {
      for (const int64_t k : grid.k_values) {
        const LtMatmul matmul(context, dtype, m, n, k);
        const size_t a_bytes = align_up(static_cast<size_t>(m * k) * in);
        const size_t set = set_bytes(m, n, k, in);
        const int64_t sets = context.rotation_sets(set, arena.bytes());
        GemmPoint point;
        point.m = m;
        point.n = n;
        point.k = k;
        point.timing = context.time_calls([&](int64_t call) {
          const char* base = arena.bytes_ptr() + static_cast<size_t>(call % sets) * set;
          matmul.run(base, base + a_bytes, d.get(), context.stream);
        });
        check_gemm(context, matmul, arena.bytes_ptr(), arena.bytes_ptr() + a_bytes, d.get());
        best_flops = std::max(best_flops, 2.0 * static_cast<double>(m) * n * k / point.timing.median_s);
        table.points.push_back(point);
      }
    }
    char line[160];
    std::snprintf(line, sizeof line, "gemm %s: m=%lld done (%zu/%zu points), best %.0f TFLOP/s", name.c_str(),
                  static_cast<long long>(m), table.points.size(), total, best_flops / 1e12);
    context.say(line);
  }
  return table;
}

}  // namespace trainsim
