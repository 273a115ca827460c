// Streaming Kineto trace reader: zlib (gzread reads plain text too) -> std::streambuf -> nlohmann
// SAX handler that keeps one pending event's fields at a time.
#include "interop/kineto_trace.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <istream>
#include <set>
#include <streambuf>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace trainsim {
namespace {

const char* const kHint = "pass the JSON a PyTorch profiler wrote (torch.profiler ... export_chrome_trace), "
                          "optionally gzip-compressed; one file per rank";

// A read-only streambuf over a gzFile, 256 KiB at a time; remembers a zlib error (truncated gzip).
class GzStreamBuf : public std::streambuf {
 public:
  explicit GzStreamBuf(gzFile f) : f_(f) {}
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(f_, buf_.data(), static_cast<unsigned>(buf_.size()));
    int errnum = Z_OK;
    const char* msg = gzerror(f_, &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
      if (error_.empty()) error_ = msg ? msg : "zlib error";
      if (n <= 0) return traits_type::eof();
    }
    if (n <= 0) return traits_type::eof();
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile f_;
  std::array<char, 1 << 18> buf_{};
  std::string error_;
};

// The fields of one traceEvents[] entry the summary needs.
struct PendingEvent {
  std::string ph, cat, name, pid;
  bool has_ts = false, has_dur = false;
  double ts = 0, dur = 0;
  int64_t tid = -1, stream = -1, correlation = -1, external_id = -1;
  // [memory] events (profile_memory=True): the allocator's totals after this event, on this device.
  double total_allocated = -1, total_reserved = -1;
  int64_t device_type = -1;
  std::vector<std::vector<int64_t>> input_dims;  // args["Input Dims"] (nested arrays)
  std::vector<std::string> input_types;          // args["Input type"]
  std::vector<std::string> concrete_inputs;      // args["Concrete Inputs"]
};

// What a runtime/driver launch tells about its kernel (same correlation id).
struct LaunchLink {
  int64_t tid = -1;
  int64_t external_id = -1;
};

bool is_kernel_cat(const std::string& c) { return c == "kernel" || c == "Kernel"; }
bool is_memcpy_cat(const std::string& c) { return c == "gpu_memcpy" || c == "Memcpy"; }
bool is_memset_cat(const std::string& c) { return c == "gpu_memset" || c == "Memset"; }
bool is_launch_cat(const std::string& c) { return c == "cuda_runtime" || c == "Runtime" || c == "cuda_driver"; }
bool is_annotation_cat(const std::string& c) { return c == "gpu_user_annotation" || c == "user_annotation"; }
bool is_cpu_op_cat(const std::string& c) { return c == "cpu_op" || c == "Operator"; }

class KinetoSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  KinetoSax(KinetoTrace& t, bool keep_cpu_ops) : t_(t), keep_cpu_ops_(keep_cpu_ops) {}
  bool saw_events = false;
  int64_t last_index() const { return index_; }  // the traceEvents[] entry last begun; -1 before any
  std::vector<TraceSpan> spans;  // candidate annotations and ProfilerStep spans (pid decides later)
  std::vector<std::string> span_cats;
  std::unordered_map<int64_t, LaunchLink> launches;  // correlation -> the launch's thread and External id

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return number(v); }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& s) override;
  bool key(string_t& k) override;
  bool start_object(std::size_t) override;
  bool end_object() override;
  bool start_array(std::size_t) override;
  bool end_array() override { --depth_; in_events_ = in_events_ && depth_ >= 2; in_props_ = in_props_ && depth_ >= 2; return true; }
  // Depths inside one event: 3 its fields, 4 args' values, 5 the elements of an args array (one
  // per op input in "Input Dims" / "Input type"), 6 the numbers of one input's dims.
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) override {
    const std::string in_event = in_events_ && depth_ >= 3 ? ", in traceEvents[" + std::to_string(index_) + "]" : "";
    throw InputError(t_.file + ": not JSON (byte " + std::to_string(pos) + in_event + "): " + ex.what(), kHint);
  }

 private:
  bool number(double v);
  int64_t id(double v, const char* key) const;
  void finish_event();
  std::string where() const { return t_.file + ": traceEvents[" + std::to_string(index_) + "]"; }

  KinetoTrace& t_;
  bool keep_cpu_ops_ = true;
  int depth_ = 0;
  std::string top_key_, field_, arg_;
  bool in_events_ = false, in_props_ = false, in_args_ = false;
  int64_t index_ = -1;
  PendingEvent e_;
};

bool KinetoSax::key(string_t& k) {
  if (depth_ == 1) top_key_ = k;
  else if (in_events_ && depth_ == 3) field_ = k;
  else if (in_events_ && in_args_ && depth_ == 4) arg_ = k;
  else if (in_props_ && depth_ == 3) field_ = k;
  return true;
}

bool KinetoSax::start_object(std::size_t) {
  ++depth_;
  if (in_events_ && depth_ == 3) {
    e_ = PendingEvent{};
    ++index_;
    field_.clear();
  } else if (in_events_ && depth_ == 4) {
    in_args_ = field_ == "args";
    arg_.clear();
  } else if (in_props_ && depth_ == 3) {
    field_.clear();
  }
  return true;
}

bool KinetoSax::end_object() {
  if (in_events_ && depth_ == 3) finish_event();
  if (in_events_ && depth_ == 4) in_args_ = false;
  if (in_props_ && depth_ == 3 && !t_.device_name.empty()) in_props_ = false;
  --depth_;
  return true;
}

bool KinetoSax::start_array(std::size_t) {
  ++depth_;
  if (depth_ == 2 && top_key_ == "traceEvents") {
    in_events_ = true;
    saw_events = true;
  } else if (depth_ == 2 && top_key_ == "deviceProperties") {
    in_props_ = true;
  } else if (in_events_ && in_args_ && depth_ == 6 && arg_ == "Input Dims") {
    e_.input_dims.emplace_back();  // one input's dims (a tensor list's deeper arrays stay empty)
  }
  return true;
}

bool KinetoSax::string(string_t& s) {
  if (in_props_ && depth_ == 3 && field_ == "name" && t_.device_name.empty()) t_.device_name = s;
  if (!in_events_) return true;
  if (depth_ == 3) {
    if (field_ == "ph") e_.ph = s;
    else if (field_ == "cat") e_.cat = s;
    else if (field_ == "name") e_.name = s;
    else if (field_ == "pid") e_.pid = s;
  } else if (depth_ == 5 && in_args_ && arg_ == "Input type") {
    e_.input_types.push_back(s);
  } else if (depth_ == 5 && in_args_ && arg_ == "Concrete Inputs") {
    e_.concrete_inputs.push_back(s);
  }
  return true;
}

// An id (pid, tid, stream, correlation) as an integer; a value past int64 (1e300, 2^64) would make
// the conversion undefined, so it is refused.
int64_t KinetoSax::id(double v, const char* key) const {
  constexpr double kLimit = 9.2e18;  // just under 2^63 = 9.223e18, the int64 range
  if (!(v > -kLimit && v < kLimit)) {
    throw InputError(where() + ": " + key + " " + nlohmann::json(v).dump() + " is not an integer id (|id| < 9.2e18)",
                     "ids in a profiler trace are small integers; the trace is damaged");
  }
  return static_cast<int64_t>(v);
}

bool KinetoSax::number(double v) {
  if (in_props_ && depth_ == 3 && field_ == "numSms" && t_.device_sm_count == 0) t_.device_sm_count = static_cast<int64_t>(v);
  if (in_props_ && depth_ == 3 && field_ == "totalGlobalMem" && t_.device_memory_bytes == 0) t_.device_memory_bytes = v;
  if (!in_events_) return true;
  if (depth_ == 3) {
    if (field_ == "ts") { e_.ts = v; e_.has_ts = true; }
    else if (field_ == "dur") { e_.dur = v; e_.has_dur = true; }
    else if (field_ == "pid") e_.pid = std::to_string(id(v, "pid"));
    else if (field_ == "tid") e_.tid = id(v, "tid");
  } else if (depth_ == 4 && in_args_) {
    if (arg_ == "stream") e_.stream = id(v, "args.stream");
    else if (arg_ == "correlation") e_.correlation = id(v, "args.correlation");
    else if (arg_ == "Total Allocated") e_.total_allocated = v;
    else if (arg_ == "Total Reserved") e_.total_reserved = v;
    else if (arg_ == "Device Type") e_.device_type = id(v, "args.Device Type");
    else if (arg_ == "External id") e_.external_id = id(v, "args.External id");
  } else if (depth_ == 6 && in_args_ && arg_ == "Input Dims" && !e_.input_dims.empty()) {
    e_.input_dims.back().push_back(id(v, "args.Input Dims"));
  }
  return true;
}

void KinetoSax::finish_event() {
  const bool memcpy = is_memcpy_cat(e_.cat), memset = is_memset_cat(e_.cat);
  if (is_kernel_cat(e_.cat) || memcpy || memset) {
    const std::string what = memcpy ? "memcpy" : memset ? "memset" : "kernel";
    if (!e_.has_ts || !e_.has_dur) {
      throw InputError(where() + ": " + what + " '" + e_.name + "' has no " + (e_.has_ts ? "dur" : "ts"),
                       "a GPU " + what + " event needs ts and dur (microseconds); was the trace cut or edited?");
    }
    if (!(e_.dur >= 0)) {
      throw InputError(where() + ": " + what + " '" + e_.name + "' has dur " + std::to_string(e_.dur) + " (must be >= 0)",
                       "a GPU " + what + "'s duration cannot be negative; the trace is damaged");
    }
    if (!std::isfinite(e_.ts + e_.dur)) {  // 1e308 + 1e308: an end no double holds
      throw InputError(where() + ": " + what + " '" + e_.name + "' ends at ts " + nlohmann::json(e_.ts).dump() + " + dur " +
                           nlohmann::json(e_.dur).dump() + ", past the largest time a double holds",
                       "timestamps in a profiler trace are microseconds since an epoch (about 1e12 to 1e15); the trace is damaged");
    }
    (memcpy ? t_.memcpys : memset ? t_.memsets : t_.kernels)
        .push_back({e_.name, e_.ts, e_.dur, e_.pid, e_.stream >= 0 ? e_.stream : e_.tid, e_.correlation,
                  e_.external_id, -1});
  } else if (e_.name == "[memory]" && e_.device_type == 1) {  // c10::DeviceType::CUDA (HIP reports as CUDA)
    t_.memory_events += 1;
    t_.peak_allocated_bytes = std::max(t_.peak_allocated_bytes, e_.total_allocated);
    t_.peak_reserved_bytes = std::max(t_.peak_reserved_bytes, e_.total_reserved);
  } else if (is_launch_cat(e_.cat) && e_.correlation >= 0 && e_.has_ts) {
    t_.launch_ts_us.emplace(e_.correlation, e_.ts);
    launches.emplace(e_.correlation, LaunchLink{e_.tid, e_.external_id});
  } else if (keep_cpu_ops_ && is_cpu_op_cat(e_.cat) && e_.external_id >= 0 && e_.has_ts && e_.has_dur) {
    t_.cpu_ops.push_back({std::move(e_.name), e_.ts, e_.dur, e_.tid, e_.external_id, std::move(e_.input_dims),
                          std::move(e_.input_types), std::move(e_.concrete_inputs)});
  } else if (e_.ph == "X" && e_.has_ts && e_.has_dur &&
             (is_annotation_cat(e_.cat) || e_.name.rfind("ProfilerStep#", 0) == 0)) {
    spans.push_back({e_.name, e_.ts, e_.dur, e_.pid});
    span_cats.push_back(e_.cat);
  }
}

// Splits the candidate spans: GPU annotations (on a kernel's pid, or cat gpu_user_annotation) and
// CPU ProfilerStep#N spans (on any other pid), one per (name, start).
void place_spans(KinetoTrace& t, const KinetoSax& sax) {
  std::set<std::string> gpu_pids;
  for (const TraceKernel& k : t.kernels) gpu_pids.insert(k.pid);
  std::set<std::pair<std::string, double>> seen_steps;
  for (std::size_t i = 0; i < sax.spans.size(); ++i) {
    const TraceSpan& s = sax.spans[i];
    const bool on_gpu = sax.span_cats[i] == "gpu_user_annotation" || gpu_pids.count(s.pid) > 0;
    if (on_gpu && is_annotation_cat(sax.span_cats[i])) {
      t.annotations.push_back(s);
    } else if (!on_gpu && s.name.rfind("ProfilerStep#", 0) == 0) {
      if (seen_steps.insert({s.name, s.ts_us}).second) t.steps.push_back(s);
    } else if (!on_gpu && sax.span_cats[i] == "user_annotation") {
      t.cpu_annotations.push_back(s);
    }
  }
  std::sort(t.steps.begin(), t.steps.end(), [](const TraceSpan& a, const TraceSpan& b) { return a.ts_us < b.ts_us; });
}

// Gives each kernel its launch's thread (and External id where the kernel has none). A kernel
// whose External id names an op whose span holds the launch is tied by it; otherwise (older
// traces number launches and ops apart: the launch's External id is its correlation) to the
// innermost op on the launch's thread whose span holds the launch. Then keeps only the CPU ops
// some kernel is tied to, indexed by External id and by the correlation tied by nesting.
void link_cpu_ops(KinetoTrace& t, const KinetoSax& sax) {
  for (std::vector<TraceKernel>* v : {&t.memcpys, &t.memsets}) {  // a cudaMemcpyAsync has a launch (and its thread) too
    for (TraceKernel& k : *v) {
      const auto l = k.correlation >= 0 ? sax.launches.find(k.correlation) : sax.launches.end();
      if (l != sax.launches.end()) k.launch_tid = l->second.tid;
    }
  }
  std::unordered_map<int64_t, std::vector<std::size_t>> by_external_id;
  for (std::size_t i = 0; i < t.cpu_ops.size(); ++i) by_external_id[t.cpu_ops[i].external_id].push_back(i);
  std::unordered_map<int64_t, std::vector<std::size_t>> by_tid;  // built on first need, sorted by start
  std::vector<char> keep(t.cpu_ops.size(), 0);
  std::unordered_map<int64_t, std::size_t> nested;  // correlation -> op index (before pruning)
  for (TraceKernel& k : t.kernels) {
    const auto l = k.correlation >= 0 ? sax.launches.find(k.correlation) : sax.launches.end();
    if (l != sax.launches.end()) {
      k.launch_tid = l->second.tid;
      if (k.external_id < 0) k.external_id = l->second.external_id;
    }
    const auto launch = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
    const auto ops = k.external_id >= 0 ? by_external_id.find(k.external_id) : by_external_id.end();
    bool tied = false;
    if (ops != by_external_id.end()) {
      for (std::size_t i : ops->second) {
        const TraceCpuOp& op = t.cpu_ops[i];
        const bool holds = launch == t.launch_ts_us.end() ||
                           (op.ts_us <= launch->second && launch->second <= op.ts_us + op.dur_us);
        if (holds) tied = true;
        keep[i] = keep[i] || holds;
      }
    }
    if (tied || launch == t.launch_ts_us.end() || k.launch_tid < 0) continue;
    if (by_tid.empty()) {
      for (std::size_t i = 0; i < t.cpu_ops.size(); ++i) by_tid[t.cpu_ops[i].tid].push_back(i);
      for (auto& [tid, v] : by_tid) {
        std::sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) { return t.cpu_ops[a].ts_us < t.cpu_ops[b].ts_us; });
      }
    }
    const auto thread = by_tid.find(k.launch_tid);
    if (thread == by_tid.end()) continue;
    const std::vector<std::size_t>& v = thread->second;
    // The latest-starting op that holds the launch is the innermost (ops on a thread nest).
    auto it = std::upper_bound(v.begin(), v.end(), launch->second,
                               [&](double ts, std::size_t i) { return ts < t.cpu_ops[i].ts_us; });
    while (it != v.begin()) {
      --it;
      const TraceCpuOp& op = t.cpu_ops[*it];
      if (launch->second <= op.ts_us + op.dur_us) {
        nested[k.correlation] = *it;
        keep[*it] = 1;
        break;
      }
    }
  }
  std::vector<std::size_t> new_index(t.cpu_ops.size(), 0);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < t.cpu_ops.size(); ++i) {
    if (!keep[i]) continue;
    new_index[i] = kept;
    if (kept != i) t.cpu_ops[kept] = std::move(t.cpu_ops[i]);
    ++kept;
  }
  t.cpu_ops.resize(kept);
  t.cpu_ops.shrink_to_fit();
  for (std::size_t i = 0; i < t.cpu_ops.size(); ++i) t.cpu_ops_by_external_id[t.cpu_ops[i].external_id].push_back(i);
  for (const auto& [correlation, i] : nested) t.cpu_op_by_correlation[correlation] = new_index[i];
}

// zlib's message starts with the path ("PATH: unexpected end of file"); the error names it already.
std::string damaged_gzip(const std::string& path, const std::string& zerr, int64_t last_index) {
  const std::string prefix = path + ": ";
  const std::string what = zerr.rfind(prefix, 0) == 0 ? zerr.substr(prefix.size()) : zerr;
  const std::string where = last_index >= 0 ? ", cut in or after traceEvents[" + std::to_string(last_index) + "]" : "";
  return path + ": the gzip stream is damaged or truncated (" + what + ")" + where;
}

}  // namespace

KinetoTrace read_kineto_trace(const std::string& path, bool keep_cpu_ops) {
  KinetoTrace t;
  t.file = path;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(path + ": cannot open the trace file (missing or unreadable)", kHint);
  GzStreamBuf buf(f);
  std::istream in(&buf);
  KinetoSax sax(t, keep_cpu_ops);
  try {
    nlohmann::json::sax_parse(in, &sax);
  } catch (const InputError&) {
    const std::string zerr = buf.error();
    gzclose(f);
    if (!zerr.empty()) throw InputError(damaged_gzip(path, zerr, sax.last_index()), kHint);
    throw;
  }
  const std::string zerr = buf.error();
  gzclose(f);
  if (!zerr.empty()) throw InputError(damaged_gzip(path, zerr, sax.last_index()), kHint);
  if (!sax.saw_events) throw InputError(path + ": no 'traceEvents' array at the top level", kHint);
  if (t.kernels.empty()) {
    throw InputError(path + ": the trace holds no GPU kernel (no event with cat 'kernel' or 'Kernel')",
                     "profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] so the GPU timeline is recorded");
  }
  place_spans(t, sax);
  link_cpu_ops(t, sax);
  return t;
}

const TraceCpuOp* launching_cpu_op(const KinetoTrace& t, const TraceKernel& k) {
  const auto launch = k.correlation >= 0 ? t.launch_ts_us.find(k.correlation) : t.launch_ts_us.end();
  const TraceCpuOp* containing = nullptr;
  const TraceCpuOp* shortest = nullptr;
  const auto ops = k.external_id >= 0 ? t.cpu_ops_by_external_id.find(k.external_id) : t.cpu_ops_by_external_id.end();
  if (ops != t.cpu_ops_by_external_id.end()) {
    for (std::size_t i : ops->second) {
      const TraceCpuOp& op = t.cpu_ops[i];
      if (shortest == nullptr || op.dur_us < shortest->dur_us) shortest = &op;
      const bool on_thread = k.launch_tid < 0 || op.tid == k.launch_tid;
      if (launch != t.launch_ts_us.end() && on_thread && op.ts_us <= launch->second &&
          launch->second <= op.ts_us + op.dur_us && (containing == nullptr || op.dur_us < containing->dur_us)) {
        containing = &op;
      }
    }
  }
  if (containing != nullptr) return containing;
  const auto nested = k.correlation >= 0 ? t.cpu_op_by_correlation.find(k.correlation) : t.cpu_op_by_correlation.end();
  if (nested != t.cpu_op_by_correlation.end()) return &t.cpu_ops[nested->second];
  return launch == t.launch_ts_us.end() ? shortest : nullptr;
}

}  // namespace trainsim
