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

// The fused attention a CPU op runs: aten::_flash_attention_forward / _backward (q [b, s, h, d])
// and aten::_scaled_dot_product_flash_attention (q [b, h, s, d]), with is_causal from its
// Concrete Inputs; false for another op or missing dims / is_causal.
struct OpAttentionShape {
  int64_t batch_heads = 0, seq = 0, head_dim = 0;
  bool causal = false, backward = false;
  std::string dtype;
};
bool attention_shape_of(const TraceCpuOp& op, OpAttentionShape& shape);

struct TraceCalibration {
  HardwareProfile profile;  // partial; provenance's run part (host, date, version) left to the caller
  int64_t gemm_kernels = 0;             // kernels whose name makes them GEMMs, over all traces
  int64_t gemm_kernels_with_shape = 0;  // of which tied to a CPU op with a GEMM shape
  double gemm_kernel_s = 0;             // their time
  double gemm_kernel_with_shape_s = 0;
  int64_t attention_kernels = 0, attention_kernels_with_shape = 0;  // flash / fmha kernels (by name)
};

// Throws InputError (exit 2) when a trace cannot be read, the traces name different GPUs or none,
// or no GEMM kernel could be tied to a shape (the trace was recorded without record_shapes=True).
TraceCalibration calibrate_from_traces(const std::vector<std::string>& paths);

// FNV-1a 64 of a file's bytes as 16 hex digits (the checkpoint format's checksum).
std::string file_fnv1a64(const std::string& path, int64_t& bytes);

}  // namespace trainsim
