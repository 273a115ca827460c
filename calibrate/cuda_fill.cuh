// Deterministic test data, written on the device: (1) pseudo-random uniform values with a full
// mantissa, for everything that is timed (GEMMs, memory-bound and attention kernels). Matrix units
// run faster on low-entropy data: an H200 ran cuBLAS bf16 GEMMs a median 14%, up to 32%, faster on
// multiples of 1/8 (what the GEMM sweep used until 2026-11-28) than on these
// (reports/measured/2026-11-28-h200-sxm-141gb), so timing on such data overstates the rate; the
// GEMM checks take fp64 references over the stored values instead of exact sums. (2) Integer
// patterns base + (i mod m) whose collective results (sums, gathers) are known in closed form and
// exact in fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim {

enum class ElementType { bf16, fp16, fp32, fp8_e4m3 };

size_t element_bytes(ElementType type);

// Uniform in [lo, hi), from a hash of (index, seed), rounded to the type.
void fill_uniform(ElementType type, void* data, size_t count, uint64_t seed, float lo, float hi, cudaStream_t stream);
// data[i] = base + (i mod modulus), fp32.
void fill_modular(float* data, size_t count, float base, int64_t modulus, cudaStream_t stream);

}  // namespace trainsim
