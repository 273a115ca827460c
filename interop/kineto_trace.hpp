// Reads a PyTorch profiler (Kineto) Chrome-trace JSON file (`.json` or `.json.gz`, one per rank),
// streaming it through nlohmann's SAX interface from a zlib stream: the document is never held as
// a tree. Keeps only what the trace summary needs: GPU kernels (cat `kernel` / `Kernel`), GPU
// memory copies and sets (`gpu_memcpy` / `Memcpy`, `gpu_memset` / `Memset`), GPU annotations
// (`gpu_user_annotation` / `user_annotation` on a GPU pid), the CPU `ProfilerStep#N` spans, the
// launch times of runtime calls by correlation id, the device name, the allocator's `[memory]`
// peaks, and the CPU ops (cat `cpu_op` / `Operator`) that carry an `External id`, with their input
// shapes and types (`record_shapes=True`), so a kernel can be tied to the ATen op that launched it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainsim {

struct TraceKernel {
  std::string name;
  double ts_us = 0;
  double dur_us = 0;
  std::string pid;
  int64_t stream = -1;       // args.stream, else tid
  int64_t correlation = -1;  // args.correlation; -1 when absent
  int64_t external_id = -1;  // args["External id"], else that of its launch event; -1 when neither has one
  int64_t launch_tid = -1;   // tid of the runtime/driver launch with the same correlation; -1 when absent
};

// A CPU op (cat `cpu_op`, or `Operator` in older traces) with an External id. input_dims holds one
// list per argument (empty for a non-tensor argument; a tensor list's dims are not kept: empty).
struct TraceCpuOp {
  std::string name;
  double ts_us = 0;
  double dur_us = 0;
  int64_t tid = -1;
  int64_t external_id = -1;
  std::vector<std::vector<int64_t>> input_dims;  // args["Input Dims"]; empty without record_shapes
  std::vector<std::string> input_types;          // args["Input type"], e.g. "c10::BFloat16", "Scalar"
  std::vector<std::string> concrete_inputs;      // args["Concrete Inputs"]: scalars' values ("True", "0.125"), "" for tensors
};

struct TraceSpan {
  std::string name;
  double ts_us = 0;
  double dur_us = 0;
  std::string pid;
};

struct KinetoTrace {
  std::string file;
  std::string device_name;  // deviceProperties[0].name; empty when the trace has none
  int64_t device_sm_count = 0;     // deviceProperties[0].numSms; 0 when absent
  double device_memory_bytes = 0;  // deviceProperties[0].totalGlobalMem; 0 when absent
  std::vector<TraceKernel> kernels;
  std::vector<TraceKernel> memcpys;  // cat gpu_memcpy / Memcpy: device activity, not kernels
  std::vector<TraceKernel> memsets;  // cat gpu_memset / Memset
  // The caching allocator's peaks over the trace's GPU [memory] events (profile_memory=True):
  // bytes allocated to tensors and bytes reserved from the device; -1 when the trace has none.
  int64_t memory_events = 0;
  double peak_allocated_bytes = -1, peak_reserved_bytes = -1;
  std::vector<TraceSpan> annotations;  // GPU annotations only (pid of a kernel)
  std::vector<TraceSpan> cpu_annotations;  // user_annotation (record_function) on a CPU pid, but steps
  std::vector<TraceSpan> steps;        // ProfilerStep#N, sorted by start
  std::unordered_map<int64_t, double> launch_ts_us;  // correlation -> CPU launch time (cuda_runtime)
  // CPU ops whose External id some kernel references (others are dropped after reading), in file
  // order, and their indices by External id (several ops may share one).
  std::vector<TraceCpuOp> cpu_ops;
  std::unordered_map<int64_t, std::vector<std::size_t>> cpu_ops_by_external_id;
  // Launches tied to an op by nesting (correlation -> index into cpu_ops): where no op with the
  // kernel's External id holds the launch (older traces number launches and ops apart).
  std::unordered_map<int64_t, std::size_t> cpu_op_by_correlation;
};

// The CPU op that launched kernel k: among the ops with k's External id, the innermost (shortest)
// one whose span contains k's launch time (on the launch's thread where known); else the innermost
// op on the launch's thread that holds the launch; without a launch time, the shortest op with
// that External id. nullptr when none.
const TraceCpuOp* launching_cpu_op(const KinetoTrace& t, const TraceKernel& k);

// Throws InputError naming the file (and the event index) when the file is missing, the gzip
// stream is truncated, the text is not JSON, there is no `traceEvents`, a kernel (or memcpy /
// memset) lacks ts / dur, has a negative dur or an end past a double, an id (pid, tid, stream,
// correlation) is past int64, or the trace has no GPU kernel.
// keep_cpu_ops: also keep the CPU ops with their shapes (cpu_ops; what `calibrate trace` and the
// GEMM roles of `trace --out` need); false keeps memory near the kernels' alone (the summary).
KinetoTrace read_kineto_trace(const std::string& path, bool keep_cpu_ops = true);

}  // namespace trainsim
