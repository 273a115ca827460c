// Deterministic test data, written on the device: (1) multiples of 1/8 in [-1, 1], exact in every
// GEMM input type (fp8 e4m3 included), so GEMM references are exact; (2) pseudo-random uniform
// values for the memory-bound and attention kernels; (3) integer patterns base + (i mod m) whose
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
// Uniform in [lo, hi), from a hash of (index, seed). type: bf16 or fp32.
void fill_uniform(ElementType type, void* data, size_t count, uint64_t seed, float lo, float hi, cudaStream_t stream);
// data[i] = base + (i mod modulus), fp32.
void fill_modular(float* data, size_t count, float base, int64_t modulus, cudaStream_t stream);

}  // namespace trainsim
