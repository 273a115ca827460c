// Deterministic test data, written on the device: (1) multiples of 1/8 in [-1, 1], exact in every
// GEMM input type (fp8 e4m3 included), for checks whose references must be exact; (2)
// pseudo-random uniform values with a full mantissa, for everything that is timed (GEMMs, memory-
// bound and attention kernels): a GPU runs matrix units faster on low-entropy data (an H200 ran
// cuBLAS bf16 GEMMs up to 14% faster on multiples of 1/8 than on random values, 2026-11-28,
// reports/measured/2026-11-28-h200-sxm-141gb), so timing on them overstates the rate; (3) integer patterns base + (i mod m) whose
// collective results (sums, gathers) are known in closed form and exact in fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim {

enum class ElementType { bf16, fp16, fp32, fp8_e4m3 };

size_t element_bytes(ElementType type);

// k/8 with k in -8..8, from a hash of (index, seed).
void fill_eighths(ElementType type, void* data, size_t count, uint64_t seed, cudaStream_t stream);
// Uniform in [lo, hi), from a hash of (index, seed), rounded to the type.
void fill_uniform(ElementType type, void* data, size_t count, uint64_t seed, float lo, float hi, cudaStream_t stream);
// data[i] = base + (i mod modulus), fp32.
void fill_modular(float* data, size_t count, float base, int64_t modulus, cudaStream_t stream);

}  // namespace trainsim
