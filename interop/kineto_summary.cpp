#include "interop/kineto_summary.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

namespace trainsim {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

double total_length(const std::vector<Interval>& merged) {
  double s = 0;
  for (const Interval& i : merged) s += i.second - i.first;
  return s;
}

double uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double covered = 0;
  std::size_t j = 0;
  for (const Interval& i : a) {
    while (j < b.size() && b[j].second <= i.first) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < i.second; ++k) {
      covered += std::min(i.second, b[k].second) - std::max(i.first, b[k].first);
    }
  }
  return total_length(a) - covered;
}

namespace {

bool has(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

std::string nccl_category(const std::string& n) {
  static const std::array<std::pair<const char*, const char*>, 8> kinds{{{"allreduce", "nccl_allreduce"},
                                                                         {"allgather", "nccl_allgather"},
                                                                         {"reducescatter", "nccl_reducescatter"},
                                                                         {"alltoall", "nccl_alltoall"},
                                                                         {"sendrecv", "nccl_sendrecv"},
                                                                         {"broadcast", "nccl_broadcast"},
                                                                         {"send", "nccl_sendrecv"},
                                                                         {"recv", "nccl_sendrecv"}}};
  for (const auto& [p, c] : kinds) if (has(n, p)) return c;
  if (has(n, "reduce")) return "nccl_reduce";
  return "nccl_other";
}

// Name patterns per category, tried in this order (the first match wins). ROCm names (the PyTorch
// profiler's traces on MI300X / MI210): hipBLASLt / Tensile GEMMs `Cijk_Alik_Bljk_...`, MIOpen's
// implicit-GEMM convolutions `igemm_fwd_gtcx*` / `igemm_bwd_*` / `igemm_wrw_*`, Composable Kernel's
// `ck::...kernel_grouped_conv_fwd_...GridwiseGemm...` (a convolution despite the GEMM in its name)
// and MIOpen's `Im2d2Col`, the Triton attention `attn_fwd`, SageAttention's `sage_fwd` and
// `sage_quant_kernel`, MIOpen's `batched_transpose_*` and `SubTensorOp*` tensor ops; RCCL's kernels
// are `ncclDevKernel_Generic` (nccl_other: the name does not say which collective).
// docs/trace.md lists where each name was seen.
const std::vector<std::pair<std::string, std::vector<const char*>>>& patterns() {
  static const std::vector<std::pair<std::string, std::vector<const char*>>> p{
      {"gemm", {"cijk_"}},  // Tensile's names hold arbitrary tags; decide them first
      {"conv", {"igemm_fwd", "igemm_bwd", "igemm_wrw", "grouped_conv", "im2col", "im2d2col"}},
      {"optimizer", {"adam", "multi_tensor", "sgd_"}},
      {"attention", {"flash", "fmha", "attn", "attention", "sdpa", "sage_fwd"}},
      {"gemm", {"gemm", "cutlass", "cublas", "xmma", "nvjet", "matmul", "wgmma"}},
      {"conv", {"conv", "wgrad", "dgrad", "winograd"}},
      {"norm", {"layer_norm", "layernorm", "rms", "batch_norm", "batchnorm", "bn_fw", "bn_bw", "norm"}},
      {"moe_route", {"topk", "router", "routing", "gate"}},
      {"moe_permute", {"permute", "unpermute", "moe"}},
      {"activation", {"gelu", "silu", "swiglu", "relu", "act_and_mul", "activation", "sigmoid", "tanh"}},
      {"softmax", {"softmax"}},
      {"elementwise", {"elementwise", "vectorized", "cast", "transpose", "copy", "fill", "fp8", "reduce_kernel",
                       "rope", "rotary", "index", "scatter", "gather", "cat_", "embedding", "memcpy", "memset",
                       "subtensorop", "quant"}},
  };
  return p;
}

}  // namespace

std::string kernel_category(const std::string& name) {
  std::string n(name.size(), ' ');
  std::transform(name.begin(), name.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (has(n, "nccl")) return nccl_category(n);
  if (has(n, "dpsk::ep") || has(n, "deep_ep")) {
    return has(n, "dispatch") ? "deepep_dispatch" : has(n, "combine") ? "deepep_combine" : "deepep_other";
  }
  for (const auto& [cat, pats] : patterns()) {
    for (const char* p : pats) if (has(n, p)) return cat;
  }
  return "other";
}

bool is_comm_category(const std::string& c) { return c.rfind("nccl_", 0) == 0 || c.rfind("deepep_", 0) == 0; }

KernelSetFigures kernel_set_figures(const std::vector<const TraceKernel*>& kernels,
                                    const std::vector<const TraceKernel*>& memory_ops) {
  std::vector<Interval> all, comm, compute;
  for (const TraceKernel* k : kernels) {
    const Interval i{k->ts_us, k->ts_us + k->dur_us};
    all.push_back(i);
    (is_comm_category(kernel_category(k->name)) ? comm : compute).push_back(i);
  }
  for (const TraceKernel* m : memory_ops) all.push_back({m->ts_us, m->ts_us + m->dur_us});
  KernelSetFigures f;
  f.kernels = static_cast<int64_t>(kernels.size());
  f.busy_us = total_length(merge_intervals(std::move(all)));
  const std::vector<Interval> comm_m = merge_intervals(std::move(comm));
  f.comm_us = total_length(comm_m);
  f.exposed_comm_us = uncovered_length(comm_m, merge_intervals(std::move(compute)));
  return f;
}

int step_of(const KinetoTrace& t, const TraceKernel& k) {
  const auto launch = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
  const int n = static_cast<int>(t.steps.size());
  if (launch != t.launch_ts_us.end()) {
    for (int s = 0; s < n; ++s) {
      if (launch->second >= t.steps[s].ts_us && launch->second <= t.steps[s].ts_us + t.steps[s].dur_us) return s;
    }
    return -1;
  }
  for (int s = 0; s < n; ++s) {
    const double end = s + 1 < n ? t.steps[s + 1].ts_us : t.steps[s].ts_us + t.steps[s].dur_us;
    if (k.ts_us >= t.steps[s].ts_us && k.ts_us < end) return s;
  }
  return -1;
}

namespace {

void summarize_steps(const KinetoTrace& t, TraceSummary& s) {
  std::vector<std::vector<const TraceKernel*>> per_step(t.steps.size()), memory_per_step(t.steps.size());
  for (const TraceKernel& k : t.kernels) {
    const int i = step_of(t, k);
    if (i >= 0) per_step[i].push_back(&k);
  }
  for (const std::vector<TraceKernel>* ops : {&t.memcpys, &t.memsets}) {
    for (const TraceKernel& m : *ops) {
      const int i = step_of(t, m);
      if (i >= 0) memory_per_step[i].push_back(&m);
    }
  }
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    double end = t.steps[i].ts_us + t.steps[i].dur_us;
    for (const TraceKernel* k : per_step[i]) end = std::max(end, k->ts_us + k->dur_us);
    for (const TraceKernel* m : memory_per_step[i]) end = std::max(end, m->ts_us + m->dur_us);
    s.steps.push_back({t.steps[i].name, end - t.steps[i].ts_us, t.steps[i].dur_us,
                       kernel_set_figures(per_step[i], memory_per_step[i])});
  }
}

}  // namespace

TraceSummary summarize_trace(const KinetoTrace& t) {
  TraceSummary s;
  s.file = t.file;
  s.device_name = t.device_name;
  std::vector<const TraceKernel*> all;
  double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
  std::map<std::string, CategoryFigures> other;
  for (const TraceKernel& k : t.kernels) {
    all.push_back(&k);
    first = std::min(first, k.ts_us);
    last = std::max(last, k.ts_us + k.dur_us);
    const std::string cat = kernel_category(k.name);
    s.categories[cat].time_us += k.dur_us;
    s.categories[cat].kernels += 1;
    if (cat == "other") {
      other[k.name].time_us += k.dur_us;
      other[k.name].kernels += 1;
    }
  }
  std::vector<const TraceKernel*> memory;
  for (const auto& [ops, cat] : {std::pair{&t.memcpys, "memcpy"}, std::pair{&t.memsets, "memset"}}) {
    for (const TraceKernel& m : *ops) {
      memory.push_back(&m);
      first = std::min(first, m.ts_us);
      last = std::max(last, m.ts_us + m.dur_us);
      s.categories[cat].time_us += m.dur_us;
      s.categories[cat].memory_ops += 1;
    }
  }
  s.span_us = all.empty() && memory.empty() ? 0 : last - first;
  s.all = kernel_set_figures(all, memory);
  summarize_steps(t, s);
  s.other_kernels.assign(other.begin(), other.end());
  std::stable_sort(s.other_kernels.begin(), s.other_kernels.end(),
                   [](const auto& a, const auto& b) { return a.second.time_us > b.second.time_us; });
  for (const TraceSpan& a : t.annotations) {
    s.annotations[a.name].time_us += a.dur_us;
    s.annotations[a.name].count += 1;
  }
  for (const TraceSpan& a : t.cpu_annotations) {
    s.cpu_annotations[a.name].time_us += a.dur_us;
    s.cpu_annotations[a.name].count += 1;
  }
  return s;
}

}  // namespace trainsim
