// A PyTorch profiler trace as a `trainsim.measurement` (`trace FILE... --out measured.json`), so
// `compare` lines a prediction up with a real GPU step exactly as it does with trainsim's runtimes.
//
// Per profiler step (its kernels as kineto_summary's step_of assigns them) the step's wall time is
// cut into the measurement's phases by a sweep over the kernel intervals of all streams: a moment
// when a compute kernel runs is forward, backward or optimizer (by the pass of the kernels running
// then, shared when passes overlap); a moment with only communication kernels is exposed
// communication (TP/EP, DP or PP by the collective's kind and the stated plan); a moment with no
// kernel is waiting (the measurement's bubble: the host, a data loader or another rank). The
// phases sum to the wall time. Op categories are kernel-time sums (overlapping streams both count).
#pragma once

#include <string>
#include <vector>

#include "common/measurement.hpp"
#include "interop/kineto_trace.hpp"

namespace trainsim {

// The model's widths where the user stated it (`--inputs-from`): they name a GEMM's role from the
// shapes its CPU op recorded (`record_shapes=True`).
struct TraceModelWidths {
  bool stated = false;
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn_hidden = 0, vocab = 0;
  bool gated_ffn = false;  // SwiGLU: the up and gate projections may run as one GEMM of 2 x ffn_hidden
};

// The parallel groups of the traced run where the user stated its plan (`--inputs-from`): they
// decide which phase an exposed collective belongs to. All 1 when not stated.
struct TracePlanGroups {
  bool stated = false;
  int64_t tp = 1, cp = 1, ep = 1, dp = 1, pp = 1;
  TraceModelWidths model;
};

// The role of a GEMM from its CPU op's shapes (aten::mm / addmm / linear / matmul with a 2-D
// weight): the linear layer of the model whose (out, in) widths, split by TP where TP splits them,
// sit where the pass puts them among the GEMM's (M, K, N): forward K = in, N = out; backward N = in
// and K = out (input gradient) or M = out (weight gradient). Returns kGemmOther when nothing or more than one layer fits,
// except that an attention-output vs query ambiguity (equal widths) is returned as kGemmProj with
// `*q_or_proj` set, for the caller to settle by where the attention kernel ran.
OpCategory gemm_role(const TraceCpuOp& op, const TracePlanGroups& groups, bool backward, bool* q_or_proj);

enum class TracePass { kForward, kBackward, kOptimizer };

// The pass a kernel ran in, by what the trace tells, in this order: the optimizer's kernels (by
// name); a GPU annotation around it naming a pass ("(F)", "(B)", "(W)", "forward", "backward");
// the thread that launched it (PyTorch's autograd engine launches the backward from its own thread,
// not the step's main thread); else forward.
struct PassEvidence {
  int64_t kernels_by_annotation = 0;
  int64_t kernels_by_thread = 0;
  int64_t kernels_by_default = 0;  // no evidence: counted as forward
};

struct TraceMeasurement {
  Measurement measurement;
  std::string device_name;
  int64_t critical_rank = 0;           // the file (rank) whose median step is longest
  std::vector<double> rank_median_s;   // each file's median step wall time
  PassEvidence passes;                 // of the critical rank
  double memory_reserved_peak_gib = 0; // the caching allocator's reserved peak (0: no memory events)
  int64_t gemm_kernels = 0;            // of the critical rank's steps
  int64_t gemm_kernels_by_role = 0;    // of them, placed in gemm_qkv ... gemm_lm_head by their shapes
  std::vector<std::string> notes;      // what the reader had to assume, for the user
};

// The category of a kernel in the measurement's op vocabulary (common/op_category.hpp): GEMMs
// whose role the trace cannot tell are gemm_other; collectives are tp_comm (TP/CP collectives,
// when the stated plan says they are TP's) or ep_comm (all-to-all, DeepEP), else none (-1: DP and
// PP traffic stays in the phases).
int trace_op_category(const std::string& kernel_name, const TracePlanGroups& groups);

// Throws InputError when `traces` is empty or a trace has no step with a kernel.
TraceMeasurement measurement_from_traces(const std::vector<KinetoTrace>& traces, const TracePlanGroups& groups);
// One file alone (no copy of the trace).
TraceMeasurement measurement_from_trace(const KinetoTrace& trace, const TracePlanGroups& groups);

}  // namespace trainsim
