// A partial GPU profile from PyTorch profiler (Kineto) traces (`trainsim calibrate trace`): the
// time of each GEMM kernel the traces ran, tied to the shape and dtype of the CPU op that launched
// it (record_shapes=True), the median over repeats per (dtype, m, n, k). What a trace does not
// measure this way (attention, memory-bound kernels, collectives, the optimizer) stays out of the
// profile, which is marked partial: predict prices those by the datasheet + reference model and
// lists them.
#pragma once

#include <string>
#include <vector>

#include "common/hardware_profile.hpp"
#include "interop/kineto_trace.hpp"

namespace trainsim {

// The GEMM a CPU op computes, from its input shapes: (m x k) . (k x n), m including a batch.
struct OpGemmShape {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;  // bf16, fp16, fp32, fp8; empty when the input type is not one of these
};

// aten::mm, addmm, bmm, baddbmm, matmul, linear, _scaled_mm with their input dims; false for
// another op or dims that do not make a GEMM.
bool gemm_shape_of(const TraceCpuOp& op, OpGemmShape& shape);

struct TraceCalibration {
  HardwareProfile profile;  // partial; provenance's run part (host, date, version) left to the caller
  int64_t gemm_kernels = 0;             // kernels whose name makes them GEMMs, over all traces
  int64_t gemm_kernels_with_shape = 0;  // of which tied to a CPU op with a GEMM shape
  double gemm_kernel_s = 0;             // their time
  double gemm_kernel_with_shape_s = 0;
};

// Throws InputError (exit 2) when a trace cannot be read, the traces name different GPUs or none,
// or no GEMM kernel could be tied to a shape (the trace was recorded without record_shapes=True).
TraceCalibration calibrate_from_traces(const std::vector<std::string>& paths);

// FNV-1a 64 of a file's bytes as 16 hex digits (the checkpoint format's checksum).
std::string file_fnv1a64(const std::string& path, int64_t& bytes);

}  // namespace trainsim
