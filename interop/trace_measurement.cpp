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

RankResult measure_rank(const KinetoTrace& t, const TracePlanGroups& groups) {
  RankResult out;
  // Pass annotations on the GPU timeline (cover a kernel's run) and on the CPU (cover its launch).
  const PassIntervals gpu = pass_intervals(t.annotations), cpu = pass_intervals(t.cpu_annotations);

  // Kernels, memcpys and memsets (device activity all), per step; a trace without ProfilerStep spans is one step from its first kernel to its last.
  std::vector<const TraceKernel*> all;
  all.reserve(all.size() + t.memcpys.size() + t.memsets.size());
  for (const std::vector<TraceKernel>* v : {&t.kernels, &t.memcpys, &t.memsets}) {
    for (const TraceKernel& k : *v) all.push_back(&k);
  }
  std::vector<TraceSpan> steps = t.steps;
  std::vector<std::vector<size_t>> per_step(steps.size());
  if (steps.empty()) {
    out.steps_from_kernels = true;
    double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
    for (const TraceKernel* k : all) {
      first = std::min(first, k->ts_us);
      last = std::max(last, k->ts_us + k->dur_us);
    }
    steps.push_back({"whole trace", first, last - first, ""});
    per_step.emplace_back();
    for (size_t i = 0; i < all.size(); ++i) per_step[0].push_back(i);
  } else {
    for (size_t i = 0; i < all.size(); ++i) {
      const int s = step_of(t, (*all[i]));
      if (s >= 0) per_step[static_cast<size_t>(s)].push_back(i);
    }
  }

  // Each kernel's lane (pass or collective phase) and, per step, its op categories.
  std::vector<int> lane(all.size(), -1);
  std::vector<IterationRecord> recs(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    if (per_step[s].empty()) continue;
    // The step's main thread: the one that launched its first kernel (of those whose launch the trace holds).
    int64_t main_tid = -1;
    double first_ts = std::numeric_limits<double>::max();
    for (size_t i : per_step[s]) {
      if (all[i]->launch_tid >= 0 && all[i]->ts_us < first_ts) {
        first_ts = all[i]->ts_us;
        main_tid = all[i]->launch_tid;
      }
    }
    // In launch order, so a GEMM's place beside the attention kernel can settle its role.
    auto launch_time = [&t](const TraceKernel& k) {
      const auto l = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
      return l != t.launch_ts_us.end() ? l->second : k.ts_us;
    };
    std::stable_sort(per_step[s].begin(), per_step[s].end(),
                     [&](size_t a, size_t b) { return launch_time(*all[a]) < launch_time(*all[b]); });
    std::array<bool, 2> attention_since_mlp{};  // per pass (forward, backward)
    for (size_t i : per_step[s]) {
      const TraceKernel& k = (*all[i]);
      const std::string category = kernel_category(k.name);
      const bool comm = is_comm_category(category);
      TracePass pass = TracePass::kForward;
      if (category == "optimizer") {
        pass = TracePass::kOptimizer;
      } else {
        const double mid = k.ts_us + 0.5 * k.dur_us;
        const auto launch = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
        const bool launched = launch != t.launch_ts_us.end();
        int64_t* evidence = &out.passes.kernels_by_default;
        if (covers(gpu.bwd, mid) || (launched && covers(cpu.bwd, launch->second))) {
          pass = TracePass::kBackward;
          evidence = &out.passes.kernels_by_annotation;
        } else if (covers(gpu.opt, mid) || (launched && covers(cpu.opt, launch->second))) {
          pass = TracePass::kOptimizer;
          evidence = &out.passes.kernels_by_annotation;
        } else if (covers(gpu.fwd, mid) || (launched && covers(cpu.fwd, launch->second))) {
          evidence = &out.passes.kernels_by_annotation;
        } else if (k.launch_tid >= 0 && main_tid >= 0) {
          if (k.launch_tid != main_tid) pass = TracePass::kBackward;
          evidence = &out.passes.kernels_by_thread;
        }
        if (!comm) ++*evidence;  // the evidence counts compute kernels (their pass splits compute)
      }
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
      if (c >= 0) (pass == TracePass::kBackward ? recs[s].ops.backward_s : recs[s].ops.forward_s)[static_cast<size_t>(c)] += k.dur_us * 1e-6;
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
  std::vector<Window> windows;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (per_step[s].empty()) continue;
    double gpu_end = std::numeric_limits<double>::lowest(), gpu_begin = std::numeric_limits<double>::max();
    for (size_t i : per_step[s]) {
      gpu_end = std::max(gpu_end, (*all[i]).ts_us + (*all[i]).dur_us);
      gpu_begin = std::min(gpu_begin, (*all[i]).ts_us);
    }
    const double begin = windows.empty() ? std::min(steps[s].ts_us, gpu_begin) : windows.back().end;
    windows.push_back({s, begin, std::max(gpu_end, begin), {}});
  }
  if (windows.empty()) {
    throw InputError(t.file + ": no profiler step holds a GPU kernel (" + std::to_string(t.steps.size()) + " ProfilerStep spans, " +
                         std::to_string(t.kernels.size()) + " kernels)",
                     "profile at least one active step (torch.profiler schedule active >= 1) with CUDA activity");
  }

  // One sweep over every placed kernel: each moment goes to the lanes running then (compute before
  // communication), and to the window that holds it.
  struct Edge {
    double t;
    int lane;
    int delta;
  };
  std::vector<Edge> edges;
  edges.reserve(2 * all.size() + 2 * windows.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (lane[i] < 0) continue;
    edges.push_back({(*all[i]).ts_us, lane[i], +1});
    edges.push_back({(*all[i]).ts_us + (*all[i]).dur_us, lane[i], -1});
  }
  for (const Window& w : windows) edges.push_back({w.end, -1, 0});  // a cut, so no interval spans two windows
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t || (a.t == b.t && a.delta < b.delta); });
  std::array<int, kLanes> active{};
  auto attribute = [&active](Window& win, double dt) {
    const int compute = active[kFwd] + active[kBwd] + active[kOpt];
    const int comm = active[kCommTp] + active[kCommDp] + active[kCommPp];
    const int first_lane = compute > 0 ? kFwd : kCommTp, last_lane = compute > 0 ? kOpt : kCommPp;
    const int n = compute > 0 ? compute : comm;
    for (int l = first_lane; n > 0 && l <= last_lane; ++l) {
      win.lane_us[static_cast<size_t>(l)] += dt * active[static_cast<size_t>(l)] / n;
    }
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

  for (const Window& win : windows) {
    IterationRecord rec = recs[win.step];
    const double wall_us = win.end - win.begin;
    PhaseBreakdown& p = rec.phases;
    p.forward_s = win.lane_us[kFwd] * 1e-6;
    p.backward_s = win.lane_us[kBwd] * 1e-6;
    p.optimizer_s = win.lane_us[kOpt] * 1e-6;
    p.tp_comm_exposed_s = win.lane_us[kCommTp] * 1e-6;
    p.dp_comm_exposed_s = win.lane_us[kCommDp] * 1e-6;
    p.pp_comm_exposed_s = win.lane_us[kCommPp] * 1e-6;
    p.close(wall_us * 1e-6);
    const std::string& name = steps[win.step].name;
    const size_t hash = name.find('#');
    rec.iteration = hash != std::string::npos ? std::atoll(name.c_str() + hash + 1) : static_cast<int64_t>(win.step);
    rec.loss = std::numeric_limits<double>::quiet_NaN();
    rec.time_s = wall_us * 1e-6;
    out.records.push_back(rec);
  }
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

OpCategory gemm_role(const TraceCpuOp& op, const TracePlanGroups& groups, bool backward, bool* q_or_proj) {
  *q_or_proj = false;
  const TraceModelWidths& m = groups.model;
  if (!m.stated) return OpCategory::kGemmOther;
  const bool linear = op.name == "aten::linear";
  if (!(linear || op.name == "aten::mm" || op.name == "aten::addmm" || op.name == "aten::matmul")) return OpCategory::kGemmOther;
  // The first two arguments with at least two dimensions: the activation (or gradient) and the weight.
  std::vector<const std::vector<int64_t>*> mats;
  for (const std::vector<int64_t>& d : op.input_dims) {
    if (d.size() >= 2) mats.push_back(&d);
    if (mats.size() == 2) break;
  }
  if (mats.size() < 2 || mats[1]->size() != 2) return OpCategory::kGemmOther;
  const std::vector<int64_t>& a = *mats[0];
  const std::vector<int64_t>& b = *mats[1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < a.size(); ++i) rows *= a[i];
  const std::array<int64_t, 3> dims = {rows, a.back(), linear ? b[0] : b[1]};
  // Where (out, in) sit among (M, K, N): the forward is x[M, in] . W^T[in, out] (K = in, N = out;
  // aten::linear's weight is [out, in]); the input gradient g[M, out] . W[out, in] (K = out, N = in)
  // and the weight gradient g^T[out, M] . x[M, in] (M = out, N = in).
  auto fits = [&dims, backward](int64_t out, int64_t in) {
    if (out <= 0 || in <= 0) return false;
    const auto [M, K, N] = dims;
    return backward ? N == in && (K == out || M == out) : K == in && N == out;
  };
  const int64_t tp = std::max<int64_t>(groups.tp, 1);
  const int64_t hd = m.head_dim > 0 ? m.head_dim : (m.heads > 0 ? m.hidden / m.heads : 0);
  const int64_t q = m.heads * hd, kv = m.kv_heads * hd;
  bool qkv = false, proj = false, fc1 = false, fc2 = false, head = false;
  for (const int64_t split : tp > 1 ? std::vector<int64_t>{1, tp} : std::vector<int64_t>{1}) {
    qkv = qkv || fits(q / split, m.hidden) || fits(kv / split, m.hidden) || fits((q + 2 * kv) / split, m.hidden);
    proj = proj || fits(m.hidden, q / split);
    fc1 = fc1 || fits(m.ffn_hidden / split, m.hidden) || (m.gated_ffn && fits(2 * m.ffn_hidden / split, m.hidden));
    fc2 = fc2 || fits(m.hidden, m.ffn_hidden / split);
    head = head || fits(m.vocab / split, m.hidden);
  }
  const int n = int(qkv) + int(proj) + int(fc1) + int(fc2) + int(head);
  if (n == 1) {
    return qkv ? OpCategory::kGemmQkv : proj ? OpCategory::kGemmProj : fc1 ? OpCategory::kGemmFc1 : fc2 ? OpCategory::kGemmFc2 : OpCategory::kGemmLmHead;
  }
  if (n == 2 && qkv && proj) {
    *q_or_proj = true;
    return OpCategory::kGemmProj;
  }
  return OpCategory::kGemmOther;
}

int trace_op_category(const std::string& kernel_name, const TracePlanGroups& groups) {
  const std::string n = lower(kernel_name);
  const std::string c = kernel_category(kernel_name);
  auto id = [](OpCategory x) { return static_cast<int>(x); };
  if (is_comm_category(c)) {
    if (c == "nccl_alltoall" || c.rfind("deepep_", 0) == 0) return id(OpCategory::kEpComm);
    if (c != "nccl_sendrecv" && groups.stated && (groups.tp > 1 || groups.cp > 1) && groups.dp == 1) return id(OpCategory::kTpComm);
    return -1;
  }
  if (has(n, "cross_entropy") || has(n, "nll_loss") || has(n, "log_softmax")) return id(OpCategory::kCrossEntropy);
  if (c == "gemm") return id(OpCategory::kGemmOther);
  if (c == "attention") return id(OpCategory::kAttentionFused);
  if (c == "softmax") return id(OpCategory::kSoftmax);
  if (c == "norm") return id(OpCategory::kNorm);
  if (c == "activation") return id(OpCategory::kActivation);
  if (c == "optimizer") return id(OpCategory::kOptimizer);
  if (c == "moe_route") return id(OpCategory::kMoeRouter);
  if (c == "moe_permute") return id(OpCategory::kMoePermute);
  if (c == "elementwise") {
    if (has(n, "rope") || has(n, "rotary")) return id(OpCategory::kRotary);
    if (has(n, "embedding")) return id(OpCategory::kEmbedding);
    if (has(n, "fp8") || has(n, "quantiz") || has(n, "amax") || has(n, "cast_transpose")) return id(OpCategory::kFp8Cast);
    if (has(n, "add") || has(n, "bias") || has(n, "dropout")) return id(OpCategory::kResidualBias);
  }
  return id(OpCategory::kOther);
}

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
