// Profiler trace -> trainsim.measurement: phases by a sweep over the kernel intervals, op
// categories by kernel-time sums, one iteration per profiler step (see the header).
#include "interop/trace_measurement.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "common/errors.hpp"
#include "interop/kineto_summary.hpp"

namespace trainsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string lower(const std::string& s) {
  std::string n(s.size(), ' ');
  std::transform(s.begin(), s.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  return n;
}

bool has(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

// A GPU annotation's pass, where its name tells one: DualPipe's "attn(B)" / "mlp(W)", a
// record_function("backward") range.
std::optional<TracePass> annotation_pass(const std::string& name) {
  const std::string n = lower(name);
  if (has(n, "(b)") || has(n, "(w)") || has(n, "backward") || has(n, "bwd")) return TracePass::kBackward;
  if (has(n, "optimizer")) return TracePass::kOptimizer;  // "## optimizer ##", "Optimizer.step#AdamW.step"
  if (has(n, "(f)") || has(n, "forward") || has(n, "fwd")) return TracePass::kForward;
  return std::nullopt;
}

bool covers(const std::vector<Interval>& merged, double t) {
  auto it = std::upper_bound(merged.begin(), merged.end(), Interval{t, std::numeric_limits<double>::max()});
  return it != merged.begin() && std::prev(it)->second > t;
}

// Where an exposed collective goes among the measurement's phases.
enum Lane { kFwd, kBwd, kOpt, kCommTp, kCommDp, kCommPp, kLanes };

Lane comm_lane(const std::string& category, const TracePlanGroups& g) {
  if (category == "nccl_alltoall" || category.rfind("deepep_", 0) == 0) return kCommTp;  // EP: predict's tp_comm phase
  const bool tp_like = g.tp > 1 || g.cp > 1;
  if (category == "nccl_sendrecv") return g.stated && g.pp == 1 && g.cp > 1 ? kCommTp : kCommPp;
  if (g.stated && tp_like && g.dp == 1) return kCommTp;
  return kCommDp;
}

struct RankResult {
  std::vector<IterationRecord> records;
  PassEvidence passes;
  bool ambiguous_comm = false;
  bool sendrecv_unstated = false;  // send/recv kernels and no plan: counted as PP
  int64_t gemm_kernels = 0, gemm_kernels_by_role = 0;
  bool steps_from_kernels = false;
};

// Merged intervals of the annotations whose names tell a pass.
struct PassIntervals {
  std::vector<Interval> fwd, bwd, opt;
};

PassIntervals pass_intervals(const std::vector<TraceSpan>& spans) {
  PassIntervals p;
  for (const TraceSpan& a : spans) {
    if (const std::optional<TracePass> pass = annotation_pass(a.name)) {
      (*pass == TracePass::kBackward ? p.bwd : *pass == TracePass::kOptimizer ? p.opt : p.fwd).push_back({a.ts_us, a.ts_us + a.dur_us});
    }
  }
  p.fwd = merge_intervals(std::move(p.fwd));
  p.bwd = merge_intervals(std::move(p.bwd));
  p.opt = merge_intervals(std::move(p.opt));
  return p;
}

// A rank's device activity (kernels, memcpys, memsets) and the steps it falls in; a trace without
// ProfilerStep spans is one step from its first kernel to its last.
struct RankActivity {
  std::vector<const TraceKernel*> all;
  std::vector<TraceSpan> steps;
  std::vector<std::vector<size_t>> per_step;  // indices into all
};

RankActivity gather_activity(const KinetoTrace& t, RankResult& out) {
  RankActivity r;
  r.all.reserve(t.kernels.size() + t.memcpys.size() + t.memsets.size());
  for (const std::vector<TraceKernel>* v : {&t.kernels, &t.memcpys, &t.memsets}) {
    for (const TraceKernel& k : *v) r.all.push_back(&k);
  }
  r.steps = t.steps;
  r.per_step.resize(r.steps.size());
  if (!r.steps.empty()) {
    for (size_t i = 0; i < r.all.size(); ++i) {
      const int s = step_of(t, *r.all[i]);
      if (s >= 0) r.per_step[static_cast<size_t>(s)].push_back(i);
    }
    return r;
  }
  out.steps_from_kernels = true;
  double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
  for (const TraceKernel* k : r.all) {
    first = std::min(first, k->ts_us);
    last = std::max(last, k->ts_us + k->dur_us);
  }
  r.steps.push_back({"whole trace", first, last - first, ""});
  r.per_step.emplace_back();
  for (size_t i = 0; i < r.all.size(); ++i) r.per_step[0].push_back(i);
  return r;
}

// What tells a kernel's pass (see the header), in order; counts the evidence used for compute kernels.
struct PassEvidenceSources {
  PassIntervals gpu, cpu;  // annotations covering a kernel's run, CPU ranges covering its launch
};

TracePass kernel_pass(const KinetoTrace& t, const PassEvidenceSources& src, const TraceKernel& k, int64_t main_tid,
                      bool counted, PassEvidence& evidence) {
  const double mid = k.ts_us + 0.5 * k.dur_us;
  const auto launch = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
  const bool launched = launch != t.launch_ts_us.end();
  auto in = [&](const std::vector<Interval>& gpu, const std::vector<Interval>& cpu) {
    return covers(gpu, mid) || (launched && covers(cpu, launch->second));
  };
  TracePass pass = TracePass::kForward;
  int64_t* counter = &evidence.kernels_by_default;
  if (in(src.gpu.bwd, src.cpu.bwd)) {
    pass = TracePass::kBackward;
    counter = &evidence.kernels_by_annotation;
  } else if (in(src.gpu.opt, src.cpu.opt)) {
    pass = TracePass::kOptimizer;
    counter = &evidence.kernels_by_annotation;
  } else if (in(src.gpu.fwd, src.cpu.fwd)) {
    counter = &evidence.kernels_by_annotation;
  } else if (k.launch_tid >= 0 && main_tid >= 0) {
    if (k.launch_tid != main_tid) pass = TracePass::kBackward;
    counter = &evidence.kernels_by_thread;
  }
  if (counted) ++*counter;
  return pass;
}

// The step's main thread: the one that launched its first kernel (of those whose launch the trace holds).
int64_t main_thread(const RankActivity& r, const std::vector<size_t>& step) {
  int64_t tid = -1;
  double first_ts = std::numeric_limits<double>::max();
  for (size_t i : step) {
    if (r.all[i]->launch_tid >= 0 && r.all[i]->ts_us < first_ts) {
      first_ts = r.all[i]->ts_us;
      tid = r.all[i]->launch_tid;
    }
  }
  return tid;
}

// One step: each kernel's lane (pass or collective phase) and the step's op categories. Kernels
// go in launch order, so a GEMM's place beside the attention kernel can settle its role.
void classify_step(const KinetoTrace& t, const PassEvidenceSources& src, const RankActivity& r, std::vector<size_t> step,
                   const TracePlanGroups& groups, std::vector<int>& lane, IterationRecord& rec, RankResult& out) {
  const int64_t main_tid = main_thread(r, step);
  auto launch_time = [&t](const TraceKernel& k) {
    const auto l = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
    return l != t.launch_ts_us.end() ? l->second : k.ts_us;
  };
  std::stable_sort(step.begin(), step.end(), [&](size_t a, size_t b) { return launch_time(*r.all[a]) < launch_time(*r.all[b]); });
  std::array<bool, 2> attention_since_mlp{};  // per pass (forward, backward)
  for (size_t i : step) {
    const TraceKernel& k = *r.all[i];
    const std::string category = kernel_category(k.name);
    const bool comm = is_comm_category(category);
    const TracePass pass = category == "optimizer" ? TracePass::kOptimizer : kernel_pass(t, src, k, main_tid, !comm, out.passes);
    if (comm) {
      lane[i] = comm_lane(category, groups);
      if (category == "nccl_sendrecv" && !groups.stated) out.sendrecv_unstated = true;
      if (category != "nccl_alltoall" && category.rfind("deepep_", 0) != 0 && category != "nccl_sendrecv" &&
          (!groups.stated || ((groups.tp > 1 || groups.cp > 1) && groups.dp > 1))) {
        out.ambiguous_comm = true;
      }
    } else {
      lane[i] = pass == TracePass::kOptimizer ? kOpt : pass == TracePass::kBackward ? kBwd : kFwd;
    }
    int c = trace_op_category(k.name, groups);
    if (pass == TracePass::kOptimizer && !comm) c = static_cast<int>(OpCategory::kOptimizer);  // the step's own kernels
    const size_t b = pass == TracePass::kBackward ? 1 : 0;
    if (c == static_cast<int>(OpCategory::kGemmOther)) {
      ++out.gemm_kernels;
      const TraceCpuOp* op = launching_cpu_op(t, k);
      bool q_or_proj = false;
      OpCategory role = op != nullptr ? gemm_role(*op, groups, pass == TracePass::kBackward, &q_or_proj) : OpCategory::kGemmOther;
      // Query and attention output have the same widths: the query runs before the attention
      // kernel in the forward and after it in the backward, the output the other way round.
      if (q_or_proj) role = (pass == TracePass::kBackward) != attention_since_mlp[b] ? OpCategory::kGemmProj : OpCategory::kGemmQkv;
      if (role == OpCategory::kGemmFc1 || role == OpCategory::kGemmFc2) attention_since_mlp[b] = false;
      if (role != OpCategory::kGemmOther) ++out.gemm_kernels_by_role;
      c = static_cast<int>(role);
    } else if (c == static_cast<int>(OpCategory::kAttentionFused)) {
      attention_since_mlp[b] = true;
    }
    if (c >= 0) (pass == TracePass::kBackward ? rec.ops.backward_s : rec.ops.forward_s)[static_cast<size_t>(c)] += k.dur_us * 1e-6;
  }
}

// The steps' windows partition the GPU timeline: a step runs from the end of the previous step's
// last kernel (the first: from its CPU span's start) to the end of its own last kernel, so a GPU
// that lags its host and a host that makes the GPU wait both read as they ran.
struct Window {
  size_t step;
  double begin, end;
  std::array<double, kLanes> lane_us{};
};

std::vector<Window> step_windows(const KinetoTrace& t, const RankActivity& r) {
  std::vector<Window> windows;
  for (size_t s = 0; s < r.steps.size(); ++s) {
    if (r.per_step[s].empty()) continue;
    double gpu_end = std::numeric_limits<double>::lowest(), gpu_begin = std::numeric_limits<double>::max();
    for (size_t i : r.per_step[s]) {
      gpu_end = std::max(gpu_end, r.all[i]->ts_us + r.all[i]->dur_us);
      gpu_begin = std::min(gpu_begin, r.all[i]->ts_us);
    }
    const double begin = windows.empty() ? std::min(r.steps[s].ts_us, gpu_begin) : windows.back().end;
    windows.push_back({s, begin, std::max(gpu_end, begin), {}});
  }
  if (windows.empty()) {
    throw InputError(t.file + ": no profiler step holds a GPU kernel (" + std::to_string(t.steps.size()) + " ProfilerStep spans, " +
                         std::to_string(t.kernels.size()) + " kernels)",
                     "profile at least one active step (torch.profiler schedule active >= 1) with CUDA activity");
  }
  return windows;
}

// One sweep over every placed kernel: each moment goes to the lanes running then (compute before
// communication, shared in proportion among them), and to the window that holds it.
void sweep(const RankActivity& r, const std::vector<int>& lane, std::vector<Window>& windows) {
  struct Edge {
    double t;
    int lane;
    int delta;
  };
  std::vector<Edge> edges;
  edges.reserve(2 * r.all.size() + windows.size());
  for (size_t i = 0; i < r.all.size(); ++i) {
    if (lane[i] < 0) continue;
    edges.push_back({r.all[i]->ts_us, lane[i], +1});
    edges.push_back({r.all[i]->ts_us + r.all[i]->dur_us, lane[i], -1});
  }
  for (const Window& w : windows) edges.push_back({w.end, -1, 0});  // a cut, so no interval spans two windows
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t || (a.t == b.t && a.delta < b.delta); });
  std::array<int, kLanes> active{};
  auto attribute = [&active](Window& win, double dt) {
    const int compute = active[kFwd] + active[kBwd] + active[kOpt];
    const int comm = active[kCommTp] + active[kCommDp] + active[kCommPp];
    const int first_lane = compute > 0 ? kFwd : kCommTp, last_lane = compute > 0 ? kOpt : kCommPp;
    const int n = compute > 0 ? compute : comm;
    for (int l = first_lane; n > 0 && l <= last_lane; ++l) win.lane_us[static_cast<size_t>(l)] += dt * active[static_cast<size_t>(l)] / n;
  };
  size_t w = 0;
  double prev = edges.front().t;
  for (const Edge& e : edges) {
    for (double a = prev; a < e.t && w < windows.size();) {  // [prev, e.t) into the windows it meets
      Window& win = windows[w];
      if (a >= win.end) {
        ++w;
        continue;
      }
      const double b = std::min(e.t, win.end);
      const double lo = std::max(a, win.begin);
      if (b > lo) attribute(win, b - lo);
      a = b;
    }
    if (e.lane >= 0) active[static_cast<size_t>(e.lane)] += e.delta;
    prev = e.t;
  }
}

IterationRecord window_record(const Window& win, const std::string& step_name, IterationRecord rec) {
  const double wall_us = win.end - win.begin;
  PhaseBreakdown& p = rec.phases;
  p.forward_s = win.lane_us[kFwd] * 1e-6;
  p.backward_s = win.lane_us[kBwd] * 1e-6;
  p.optimizer_s = win.lane_us[kOpt] * 1e-6;
  p.tp_comm_exposed_s = win.lane_us[kCommTp] * 1e-6;
  p.dp_comm_exposed_s = win.lane_us[kCommDp] * 1e-6;
  p.pp_comm_exposed_s = win.lane_us[kCommPp] * 1e-6;
  p.close(wall_us * 1e-6);
  const size_t hash = step_name.find('#');
  rec.iteration = hash != std::string::npos ? std::atoll(step_name.c_str() + hash + 1) : static_cast<int64_t>(win.step);
  rec.loss = std::numeric_limits<double>::quiet_NaN();
  rec.time_s = wall_us * 1e-6;
  return rec;
}

RankResult measure_rank(const KinetoTrace& t, const TracePlanGroups& groups) {
  RankResult out;
  const PassEvidenceSources src{pass_intervals(t.annotations), pass_intervals(t.cpu_annotations)};
  const RankActivity r = gather_activity(t, out);
  std::vector<int> lane(r.all.size(), -1);
  std::vector<IterationRecord> recs(r.steps.size());
  for (size_t s = 0; s < r.steps.size(); ++s) {
    if (!r.per_step[s].empty()) classify_step(t, src, r, r.per_step[s], groups, lane, recs[s], out);
  }
  std::vector<Window> windows = step_windows(t, r);
  sweep(r, lane, windows);
  for (const Window& win : windows) out.records.push_back(window_record(win, r.steps[win.step].name, recs[win.step]));
  return out;
}

double median_wall(const std::vector<IterationRecord>& records) {
  std::vector<double> w;
  for (const IterationRecord& r : records) w.push_back(r.time_s);
  std::sort(w.begin(), w.end());
  const size_t n = w.size();
  return n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
}

}  // namespace

namespace {

TraceMeasurement measure(const std::vector<const KinetoTrace*>& ptrs, const TracePlanGroups& groups);

}  // namespace

TraceMeasurement measurement_from_traces(const std::vector<KinetoTrace>& traces, const TracePlanGroups& groups) {
  std::vector<const KinetoTrace*> ptrs;
  for (const KinetoTrace& t : traces) ptrs.push_back(&t);
  return measure(ptrs, groups);
}

TraceMeasurement measurement_from_trace(const KinetoTrace& trace, const TracePlanGroups& groups) { return measure({&trace}, groups); }

namespace {

TraceMeasurement measure(const std::vector<const KinetoTrace*>& ptrs, const TracePlanGroups& groups) {
  if (ptrs.empty()) throw InputError("trace --out: no trace file given", "pass one Kineto trace per rank");
  TraceMeasurement tm;
  std::vector<RankResult> ranks;
  for (const KinetoTrace* t : ptrs) {
    ranks.push_back(measure_rank(*t, groups));
    tm.rank_median_s.push_back(median_wall(ranks.back().records));
  }
  tm.critical_rank = std::max_element(tm.rank_median_s.begin(), tm.rank_median_s.end()) - tm.rank_median_s.begin();
  const RankResult& r = ranks[static_cast<size_t>(tm.critical_rank)];
  tm.device_name = ptrs[static_cast<size_t>(tm.critical_rank)]->device_name;
  tm.passes = r.passes;
  Measurement& m = tm.measurement;
  m.iterations = r.records;
  m.warmup_iterations = 0;  // the profiler's warm-up steps are not in the trace
  summarize_iterations(m);
  m.op_categories = {median_op_categories(r.records, 0)};
  m.ranks = static_cast<int64_t>(ptrs.size());
  m.backend = "trace";
  const std::string& file = ptrs[static_cast<size_t>(tm.critical_rank)]->file;
  if (ptrs.size() > 1) {
    tm.notes.push_back("the measurement is the rank with the longest median step: " + file + " (rank " +
                       std::to_string(tm.critical_rank) + " of the files given)");
  }
  if (r.steps_from_kernels) {
    tm.notes.push_back(file + ": no ProfilerStep span: one iteration from the first kernel's start to the last kernel's end");
  }
  if (r.passes.kernels_by_annotation == 0 && r.passes.kernels_by_thread > 0 && m.breakdown.backward_s == 0) {
    tm.notes.push_back("no kernel was launched from a thread other than the step's main one: no backward pass seen "
                       "(an inference trace, or a backward launched from the main thread: compute counted as forward)");
  }
  if (r.passes.kernels_by_default > 0) {
    tm.notes.push_back(std::to_string(r.passes.kernels_by_default) +
                       " compute kernels with no launch thread and no pass annotation: counted as forward");
  }
  if (r.ambiguous_comm) {
    tm.notes.push_back(groups.stated ? "the plan has both TP/CP and DP groups and the trace does not say which group a collective "
                                       "ran in: exposed all-reduce / all-gather / reduce-scatter counted as DP"
                                     : "no plan stated (--inputs-from): exposed all-reduce / all-gather / reduce-scatter counted as DP");
  }
  tm.gemm_kernels = r.gemm_kernels;
  tm.gemm_kernels_by_role = r.gemm_kernels_by_role;
  if (r.gemm_kernels > 0) {
    tm.notes.push_back(std::to_string(r.gemm_kernels_by_role) + " of " + std::to_string(r.gemm_kernels) +
                       " GEMM kernels placed by role from their CPU op's shapes; the rest are gemm_other" +
                       (groups.model.stated ? " (no shapes recorded: record_shapes=True; or widths no layer of the model has)"
                                            : " (no model stated: --inputs-from)"));
  }
  if (r.sendrecv_unstated) {
    tm.notes.push_back("no plan stated (--inputs-from): exposed send/recv counted as PP (an all-to-all NCCL runs as send/recv "
                       "reads the same; with a stated plan of CP and no PP it is TP/CP's)");
  }
  int64_t memory_events = 0;
  for (const KinetoTrace* t : ptrs) {
    memory_events += t->memory_events;
    if (t->memory_events == 0) continue;
    m.memory_peak_gib = std::max(m.memory_peak_gib, t->peak_allocated_bytes / kGiB);
    tm.memory_reserved_peak_gib = std::max(tm.memory_reserved_peak_gib, t->peak_reserved_bytes / kGiB);
  }
  if (memory_events == 0) {
    tm.notes.push_back("the trace holds no GPU memory events (profile with profile_memory=True): memory_peak_gib 0, compare "
                       "shows n/a");
  } else {
    tm.notes.push_back("memory: the caching allocator's peak over the profiled window, largest over ranks: " +
                       std::to_string(m.memory_peak_gib).substr(0, 6) + " GiB allocated to tensors (memory_peak_gib), " +
                       std::to_string(tm.memory_reserved_peak_gib).substr(0, 6) +
                       " GiB reserved from the device; what ran before the window is not seen");
  }
  return tm;
}

}  // namespace

}  // namespace trainsim
