// A measured hardware profile (`trainsim.hardware_profile`, schema_version 1): what `trainsim
// calibrate` writes and `--profile` reads. Every point carries median / p10 / p90 seconds and its
// sample count; collectives also their nccl-tests algbw and busbw; fits (alpha-beta per
// collective, with residuals) are stored beside the points. Provenance names the device and the
// library versions. Loading validates strictly (profile_json.cpp); nothing is ever filled in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

struct Timing {
  double median_s = 0, p10_s = 0, p90_s = 0;
  int64_t samples = 0;
};

struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;  // (m x k) . (k x n)
  Timing timing;
};

struct GemmTable {
  std::string dtype;  // bf16, fp16, tf32, fp32, fp8
  std::vector<int64_t> m_values, n_values, k_values;  // the measured grid (every combination is a point)
  std::vector<GemmPoint> points;
};

// GEMM shapes as a profiler trace measured them (`calibrate trace`): scattered (m, n, k), not a
// grid. m includes a batched GEMM's batch (as the grid is looked up); time per launching op, the
// median over its repeats in the traces.
struct GemmShapePoint {
  int64_t m = 0, n = 0, k = 0;  // (m x k) . (k x n)
  std::string op;               // the launching CPU op(s), e.g. "aten::addmm,aten::mm" (for people reading the file)
  Timing timing;
};

struct GemmShapeTable {
  std::string dtype;  // bf16, fp16, fp32, fp8
  std::vector<GemmShapePoint> points;
};

struct AttentionPoint {
  int64_t batch_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  bool backward = false;
  Timing timing;
};

struct AttentionTable {
  std::string dtype;
  std::string kernel;  // which implementation was timed
  std::vector<AttentionPoint> points;
};

struct MemoryBoundPoint {
  double bytes = 0;  // read + written
  Timing timing;
};

struct MemoryBoundTable {
  std::string kernel;  // copy, layernorm, softmax, gelu, swiglu, adam, h2d, d2h
  std::vector<MemoryBoundPoint> points;  // increasing bytes
};

struct CollectivePoint {
  double bytes = 0;  // whole buffer S (nccl-tests convention)
  Timing timing;
  double algbw_gb_per_s = 0, busbw_gb_per_s = 0;
};

struct CollectiveFit {
  double alpha_s = 0;            // latency
  double beta_s_per_byte = 0;    // inverse bandwidth (of S)
  double residual_rms_rel = 0;   // root-mean-square relative residual over the points
};

struct CollectiveTable {
  std::string kind;   // all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, send-recv
  int64_t ranks = 0;
  int64_t ranks_per_node = 0;
  int64_t nodes = 1;
  std::vector<CollectivePoint> points;  // increasing bytes
  CollectiveFit fit;
};

struct OverlapPoint {
  std::string collective;  // the collective running beside the GEMM
  double gemm_slowdown = 1;  // GEMM time with the collective / alone
};

struct ProfileProvenance {
  std::string device_kind;  // gpu | cpu
  std::string device;       // "NVIDIA H100 80GB HBM3", CPU model name
  int64_t devices = 1;      // GPUs (or MPI ranks) measured
  int64_t sm_count = 0;     // GPU only
  int64_t cores = 0;        // CPU only
  double memory_bytes = 0;  // memory of one device (GPU HBM, or host RAM for a CPU profile)
  std::string driver, cuda, cublas, nccl, mpi, eigen;
  std::string clocks;       // e.g. "sm 1980 MHz, mem 2619 MHz"
  std::string host, date_utc, tool_version, git_revision;
  std::string method;       // how samples were taken
  // The files a profile was read from (`calibrate trace`): path, FNV-1a 64 of its bytes, size.
  struct SourceFile {
    std::string path, fnv1a64;
    int64_t bytes = 0;
  };
  std::vector<SourceFile> traces;
};

struct HardwareProfile {
  ProfileProvenance provenance;
  std::vector<GemmTable> gemm;
  std::vector<GemmShapeTable> gemm_shapes;  // measured shapes from profiler traces
  std::vector<AttentionTable> attention;
  std::vector<MemoryBoundTable> memory_bound;
  std::vector<CollectiveTable> collectives;
  std::vector<OverlapPoint> overlap;
  std::vector<std::string> notes;  // what was not measured and why
  // A partial profile (from profiler traces) measured only some op kinds: what it lacks (a copy
  // table, attention, collectives, the optimizer) is priced by the datasheet + reference model
  // and listed by predict, instead of refused.
  bool partial = false;
};

// Percentiles of raw samples (seconds); samples need not be sorted.
Timing summarize_samples(std::vector<double> samples);

}  // namespace trainsim
