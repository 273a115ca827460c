// What a Kineto trace says about a step: per ProfilerStep#N its wall time, GPU busy time (the
// union of the intervals of kernels, memcpys and memsets over all streams), kernel count,
// communication time and the part of it no compute kernel overlaps; per kernel category (by
// kernel name; memcpy / memset by event category) time and count; per GPU annotation time (sum of
// its spans) and count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "interop/kineto_trace.hpp"

namespace trainsim {

using Interval = std::pair<double, double>;  // [start, end), microseconds

// Sorted, non-overlapping union of the intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> v);
double total_length(const std::vector<Interval>& merged);
// Length of `a` not covered by `b` (both merged).
double uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// The category of a kernel by its name (CUDA and ROCm libraries' names): gemm, attention, norm,
// activation, softmax, elementwise, optimizer, moe_route, moe_permute, conv, nccl_allreduce /
// allgather / reducescatter / sendrecv / alltoall / broadcast / reduce / other (RCCL keeps the
// nccl names), deepep_dispatch / deepep_combine / deepep_other, or "other". memcpy and memset are not kernel
// names: they are the categories of the trace's gpu_memcpy / gpu_memset events.
std::string kernel_category(const std::string& name);
bool is_comm_category(const std::string& category);

struct KernelSetFigures {
  int64_t kernels = 0;         // kernels only (memcpy / memset events are not counted)
  double busy_us = 0;          // union of kernel, memcpy and memset intervals
  double comm_us = 0;          // union of communication kernel intervals
  double exposed_comm_us = 0;  // communication not overlapped by any compute kernel
};
// `memory_ops` (memcpys and memsets) add to busy only: they are neither kernels nor compute.
KernelSetFigures kernel_set_figures(const std::vector<const TraceKernel*>& kernels,
                                    const std::vector<const TraceKernel*>& memory_ops = {});

// The step a kernel belongs to (an index into t.steps): the one whose CPU span holds its launch
// (by correlation id), else the one whose [start, next step's start) holds the kernel's start.
// -1 when none.
int step_of(const KinetoTrace& t, const TraceKernel& k);

struct StepFigures {
  std::string name;
  double wall_us = 0;  // step start to max(CPU span end, end of its last kernel)
  double cpu_us = 0;   // the ProfilerStep#N span on the CPU
  KernelSetFigures k;
};

struct CategoryFigures {
  double time_us = 0;  // sum of kernel (or memcpy / memset) durations
  int64_t kernels = 0;
  int64_t memory_ops = 0;  // memcpy / memset events (categories memcpy and memset only)
};

struct AnnotationFigures {
  double time_us = 0;  // sum of the spans' durations
  int64_t count = 0;
};

struct TraceSummary {
  std::string file;
  std::string device_name;
  double span_us = 0;  // first device activity's start to the last one's end (kernels, memcpys, memsets)
  KernelSetFigures all;
  std::vector<StepFigures> steps;
  std::map<std::string, CategoryFigures> categories;
  std::vector<std::pair<std::string, CategoryFigures>> other_kernels;  // by name, most time first
  std::map<std::string, AnnotationFigures> annotations;      // on the GPU timeline
  std::map<std::string, AnnotationFigures> cpu_annotations;  // record_function spans on the CPU
};

TraceSummary summarize_trace(const KinetoTrace& t);

}  // namespace trainsim
