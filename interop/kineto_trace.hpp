// Reads a PyTorch profiler (Kineto) Chrome-trace JSON file (`.json` or `.json.gz`, one per rank),
// streaming it through nlohmann's SAX interface from a zlib stream: the document is never held as
// a tree. Keeps only what the trace summary needs: GPU kernels (cat `kernel` / `Kernel`), GPU
// memory copies and sets (`gpu_memcpy` / `Memcpy`, `gpu_memset` / `Memset`), GPU annotations
// (`gpu_user_annotation` / `user_annotation` on a GPU pid), the CPU `ProfilerStep#N` spans, the
// launch times of runtime calls by correlation id, and the device name.
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
  std::vector<TraceKernel> kernels;
  std::vector<TraceKernel> memcpys;  // cat gpu_memcpy / Memcpy: device activity, not kernels
  std::vector<TraceKernel> memsets;  // cat gpu_memset / Memset
  std::vector<TraceSpan> annotations;  // GPU annotations only (pid of a kernel)
  std::vector<TraceSpan> cpu_annotations;  // user_annotation (record_function) on a CPU pid, but steps
  std::vector<TraceSpan> steps;        // ProfilerStep#N, sorted by start
  std::unordered_map<int64_t, double> launch_ts_us;  // correlation -> CPU launch time (cuda_runtime)
};

// Throws InputError naming the file (and the event index) when the file is missing, the gzip
// stream is truncated, the text is not JSON, there is no `traceEvents`, a kernel (or memcpy /
// memset) lacks ts / dur, has a negative dur or an end past a double, an id (pid, tid, stream,
// correlation) is past int64, or the trace has no GPU kernel.
KinetoTrace read_kineto_trace(const std::string& path);

}  // namespace trainsim
