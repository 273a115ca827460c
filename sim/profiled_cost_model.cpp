// Interpolation over measured tables.
#include "sim/profiled_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/errors.hpp"
#include "sim/collectives.hpp"

namespace trainsim {

namespace {

// Bracketing position of x in increasing `values`: index i and fraction f in log space, so the
// value is between values[i] and values[i + 1]. False when x lies outside.
bool bracket(const std::vector<double>& values, double x, size_t& i, double& f) {
  if (values.empty() || x < values.front() * (1 - 1e-12) || x > values.back() * (1 + 1e-12)) return false;
  if (values.size() == 1) {
    i = 0;
    f = 0;
    return true;
  }
  i = static_cast<size_t>(std::upper_bound(values.begin(), values.end(), x) - values.begin());
  i = std::min(std::max<size_t>(i, 1), values.size() - 1) - 1;
  f = (std::log(x) - std::log(values[i])) / (std::log(values[i + 1]) - std::log(values[i]));
  f = std::clamp(f, 0.0, 1.0);
  return true;
}

double clamp_to(const std::vector<double>& values, double x) { return std::clamp(x, values.front(), values.back()); }

std::vector<double> as_doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// Log-log interpolation of time over bytes; nullopt outside.
std::optional<double> interpolate_bytes(const std::vector<double>& bytes, const std::vector<double>& seconds, double x) {
  size_t i = 0;
  double f = 0;
  if (!bracket(bytes, x, i, f)) return std::nullopt;
  if (bytes.size() == 1) return seconds[0];
  return std::exp(std::log(seconds[i]) * (1 - f) + std::log(seconds[i + 1]) * f);
}

}  // namespace

std::string gemm_dtype_for(Precision precision, const HardwareProfile& profile) {
  switch (precision) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
    case Precision::kMxfp8: return "mxfp8";
    case Precision::kNvfp4: return "nvfp4";
    case Precision::kFp32: return profile.provenance.device_kind == "cpu" ? "fp32" : "tf32";
  }
  return "bf16";
}

GpuSpec device_from_cpu_profile(const HardwareProfile& p) {
  GpuSpec g;
  g.name = "cpu";
  g.display_name = p.provenance.device + " (from profile)";
  double best_flops = 0, best_copy = 0;
  for (const GemmTable& t : p.gemm) {
    for (const GemmPoint& pt : t.points) {
      best_flops = std::max(best_flops, 2.0 * static_cast<double>(pt.m) * static_cast<double>(pt.n) * static_cast<double>(pt.k) / pt.timing.median_s);
    }
  }
  for (const MemoryBoundTable& t : p.memory_bound) {
    for (const MemoryBoundPoint& pt : t.points) best_copy = std::max(best_copy, pt.bytes / pt.timing.median_s);
  }
  g.peak_bf16_flops_per_s = g.peak_fp16_flops_per_s = g.peak_tf32_flops_per_s = g.peak_fp32_flops_per_s = best_flops;
  g.memory_bytes = p.provenance.memory_bytes;
  g.memory_bandwidth_bytes_per_s = best_copy;
  g.nvlink_bandwidth_bytes_per_s = best_copy;  // ranks on one host share its memory
  g.sm_count = std::max<int64_t>(1, p.provenance.cores);
  g.source = "measured profile: peak = best measured GEMM rate, bandwidth = best measured copy";
  // Not a catalog GPU: no generation, no reference records (its measured tables price its ops;
  // the datasheet fallback takes ratios 1), NCCL's LL uncapped, and no CUDA workspace (the host
  // runs no CUDA context, Hardware::is_host).
  g.capabilities.generation = GpuGeneration::kNone;
  g.capabilities.reference_family = ReferenceFamily::kNone;
  g.capabilities.source = "the CPU host: its measured profile";
  return g;
}

ProfiledCostModel::ProfiledCostModel(const HardwareProfile& profile, std::string source, const Hardware& hardware,
                                     Precision precision, bool allow_extrapolation, const EfficiencyConstants& fallback)
    : profile_(profile), source_(std::move(source)), allow_extrapolation_(allow_extrapolation),
      fallback_(hardware, precision, fallback) {
  const std::string dtype = gemm_dtype_for(precision, profile);
  dtype_ = dtype;
  for (const GemmTable& t : profile.gemm) {
    if (t.dtype == dtype) gemm_ = &t;
  }
  for (const GemmShapeTable& t : profile.gemm_shapes) {
    if (t.dtype == dtype) gemm_shapes_ = &t;
  }
  if (gemm_ == nullptr && gemm_shapes_ == nullptr) {
    throw InputError(source_ + ": no GEMM table for " + dtype + " (the plan's precision)",
                     "calibrate with that dtype, or predict with a --precision the profile has");
  }
  for (const MemoryBoundTable& t : profile.memory_bound) {
    if (t.kernel == "copy") copy_ = &t;
  }
  if (copy_ == nullptr && !profile.partial) {
    throw InputError(source_ + ": no memory_bound table for kernel \"copy\"", "re-run trainsim calibrate");
  }
  // Fused attention ops are priced from a fused kernel's table (the unfused path is GEMMs + softmax).
  for (const AttentionTable& t : profile.attention) {
    if (t.dtype == dtype && t.kernel.find("flash") != std::string::npos && attention_ == nullptr) attention_ = &t;
  }
}

void ProfiledCostModel::refuse(const std::string& what) const {
  throw InputError(source_ + ": " + what, "calibrate a wider range, or pass --allow-extrapolation (the output then lists "
                                          "every op priced outside the measurements)");
}

void ProfiledCostModel::note(const std::string& what) const {
  std::lock_guard<std::mutex> lock(mutex_);
  extrapolated_.insert(what);
}

void ProfiledCostModel::not_measured(const std::string& category, const std::string& what) const {
  if (!profile_.partial) {
    if (!allow_extrapolation_) refuse(what);
    note(what + " (datasheet formula)");
    return;
  }
  note(category + ": not measured by this partial profile (" + what + "): datasheet + reference model");
}

std::set<std::string> ProfiledCostModel::extrapolated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return extrapolated_;
}

double ProfiledCostModel::gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  // The CPU runtime runs a batch of products (attention's QK^T and AV per sequence and head) one
  // product at a time, each at its own size's efficiency; a GPU runs them as one batched kernel.
  if (batch > 1 && profile_.provenance.device_kind == "cpu") return static_cast<double>(batch) * gemm_s(m, n, k, 1);
  if (gemm_ == nullptr) return gemm_from_shapes(m, n, k, batch);
  if (gemm_shapes_ != nullptr) {  // a shape measured exactly (a trace) before the grid's interpolation
    for (const GemmShapePoint& p : gemm_shapes_->points) {
      if (p.m == m * batch && p.n == n && p.k == k) return p.timing.median_s;
    }
  }
  const std::vector<double> ms = as_doubles(gemm_->m_values), ns = as_doubles(gemm_->n_values), ks = as_doubles(gemm_->k_values);
  const double q[3] = {static_cast<double>(m * batch), static_cast<double>(n), static_cast<double>(k)};
  const std::vector<double>* axes[3] = {&ms, &ns, &ks};
  size_t i[3];
  double f[3];
  bool inside = true;
  double c[3];
  for (int d = 0; d < 3; ++d) {
    c[d] = q[d];
    if (!bracket(*axes[d], q[d], i[d], f[d])) {
      inside = false;
      c[d] = clamp_to(*axes[d], q[d]);
      bracket(*axes[d], c[d], i[d], f[d]);
    }
  }
  if (!inside) {
    const std::string what = "GEMM " + gemm_->dtype + " " + std::to_string(m * batch) + "x" + std::to_string(n) + "x" +
                             std::to_string(k) + " is outside the measured grid (m " + std::to_string(gemm_->m_values.front()) +
                             "-" + std::to_string(gemm_->m_values.back()) + ", n " + std::to_string(gemm_->n_values.front()) + "-" +
                             std::to_string(gemm_->n_values.back()) + ", k " + std::to_string(gemm_->k_values.front()) + "-" +
                             std::to_string(gemm_->k_values.back()) + ")";
    if (!allow_extrapolation_) refuse(what);
    note(what);
  }
  // Trilinear interpolation of log time over the 8 corners.
  auto time_at = [&](size_t a, size_t b, size_t d) {
    const int64_t mm = gemm_->m_values[std::min(a, gemm_->m_values.size() - 1)];
    const int64_t nn = gemm_->n_values[std::min(b, gemm_->n_values.size() - 1)];
    const int64_t kk = gemm_->k_values[std::min(d, gemm_->k_values.size() - 1)];
    for (const GemmPoint& p : gemm_->points) {
      if (p.m == mm && p.n == nn && p.k == kk) return std::log(p.timing.median_s);
    }
    TRAINSIM_ASSERT(false, "the GEMM grid was checked complete when the profile was loaded");
  };
  double log_t = 0;
  for (int corner = 0; corner < 8; ++corner) {
    const size_t a = i[0] + (corner & 1), b = i[1] + ((corner >> 1) & 1), d = i[2] + ((corner >> 2) & 1);
    const double w = ((corner & 1) ? f[0] : 1 - f[0]) * (((corner >> 1) & 1) ? f[1] : 1 - f[1]) * (((corner >> 2) & 1) ? f[2] : 1 - f[2]);
    if (w > 0) log_t += w * time_at(a, b, d);
  }
  // Outside the grid: the nearest point's efficiency, scaled by the FLOP ratio.
  return std::exp(log_t) * (q[0] * q[1] * q[2]) / (c[0] * c[1] * c[2]);
}

// The measured shape itself, else the nearest measured shape in log (m, n, k) at its FLOP rate.
double ProfiledCostModel::gemm_from_shapes(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  const double q[3] = {static_cast<double>(m * batch), static_cast<double>(n), static_cast<double>(k)};
  const GemmShapePoint* nearest = nullptr;
  double best = 0;
  for (const GemmShapePoint& p : gemm_shapes_->points) {
    if (p.m == m * batch && p.n == n && p.k == k) return p.timing.median_s;
    const double d = std::pow(std::log(q[0] / static_cast<double>(p.m)), 2) + std::pow(std::log(q[1] / static_cast<double>(p.n)), 2) +
                     std::pow(std::log(q[2] / static_cast<double>(p.k)), 2);
    if (nearest == nullptr || d < best) {
      nearest = &p;
      best = d;
    }
  }
  const double p_flops = static_cast<double>(nearest->m) * static_cast<double>(nearest->n) * static_cast<double>(nearest->k);
  const double tflops = 2.0 * p_flops / nearest->timing.median_s / 1e12;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.0f", tflops);
  note("GEMM " + dtype_ + " " + std::to_string(m * batch) + "x" + std::to_string(n) + "x" + std::to_string(k) +
       " was not measured: priced at the FLOP rate of the nearest measured shape " + std::to_string(nearest->m) + "x" +
       std::to_string(nearest->n) + "x" + std::to_string(nearest->k) + " (" + rate + " TFLOP/s)");
  return nearest->timing.median_s * (q[0] * q[1] * q[2]) / p_flops;
}

double ProfiledCostModel::attention_s(const Op& op) const {
  if (attention_ == nullptr) {
    not_measured("attention", "no attention table for " + dtype_ + " (fused attention)");
    return fallback_.attention_s(op);
  }
  std::vector<double> seqs, seconds;
  double per_batch_head = 0;
  for (const AttentionPoint& p : attention_->points) {
    if (p.head_dim != op.attention_head_dim || p.backward != op.backward || !p.causal) continue;
    seqs.push_back(static_cast<double>(p.seq));
    seconds.push_back(p.timing.median_s / static_cast<double>(p.batch_heads));  // time per (batch x head)
  }
  // Sort by sequence (several batch sizes per sequence: keep the largest batch, the most efficient).
  std::vector<size_t> order(seqs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a] < seqs[b] || (seqs[a] == seqs[b] && seconds[a] > seconds[b]); });
  std::vector<double> s2, t2;
  for (size_t i : order) {
    if (!s2.empty() && s2.back() == seqs[i]) {
      t2.back() = seconds[i];
      continue;
    }
    s2.push_back(seqs[i]);
    t2.push_back(seconds[i]);
  }
  const double seq = static_cast<double>(op.attention_seq);
  std::optional<double> t = interpolate_bytes(s2, t2, seq);
  if (!t) {
    const std::string what = "attention head_dim " + std::to_string(op.attention_head_dim) + " seq " +
                             std::to_string(op.attention_seq) + (op.backward ? " backward" : " forward") +
                             " is outside the measured attention table";
    // A partial profile (traces) measured the attention shapes its run had: others, like a
    // training step's backward from an inference trace, are priced as with extrapolation, listed.
    const bool allow = allow_extrapolation_ || profile_.partial;
    if (!allow || s2.empty()) {
      if (!allow) refuse(what);
      note(what + " (datasheet formula)");
      return fallback_.attention_s(op);
    }
    note(what);
    const double nearest = clamp_to(s2, seq);
    t = *interpolate_bytes(s2, t2, nearest) * (seq * seq) / (nearest * nearest);  // attention work grows with s^2
  }
  per_batch_head = *t;
  // A sliding window: the measured causal kernel's time scaled by the share of its pairs the band keeps.
  return per_batch_head * static_cast<double>(op.attention_batch_heads) / static_cast<double>(op.attention_cp) * op.attention_window_share();
}

double ProfiledCostModel::interpolate_table(const MemoryBoundTable& table, double bytes) const {
  std::vector<double> b, t;
  for (const MemoryBoundPoint& p : table.points) {
    b.push_back(p.bytes);
    t.push_back(p.timing.median_s);
  }
  if (auto inside = interpolate_bytes(b, t, bytes)) return *inside;
  const std::string what = table.kernel + " of " + std::to_string(static_cast<int64_t>(bytes)) +
                           " bytes is outside the measured sizes (" + std::to_string(static_cast<int64_t>(b.front())) +
                           "-" + std::to_string(static_cast<int64_t>(b.back())) + ")";
  if (!allow_extrapolation_) refuse(what);
  note(table.kernel + " kernels outside the measured sizes (scaled by bytes)");
  const double nearest = clamp_to(b, bytes);
  return *interpolate_bytes(b, t, nearest) * bytes / nearest;
}

double ProfiledCostModel::memory_bound_s(double bytes) const {
  if (copy_ == nullptr) {  // a partial profile (the constructor refuses a full one without it)
    not_measured("memory-bound kernels", "no memory-bound table");
    return fallback_.memory_bound_s(bytes);
  }
  return interpolate_table(*copy_, bytes);
}

double ProfiledCostModel::memory_bound_op_s(const Op& op) const {
  const std::string name = op.name;
  const bool backward = name.size() > 4 && name.compare(name.size() - 4, 4, "_bwd") == 0;
  // Tables the CPU calibrator times from the runtime's own kernels, one for both passes: the
  // residual add (its backward adds two gradients, the same kernel), a bias's column sums, and the
  // rotary embedding (its backward is the inverse rotation).
  const bool bias_grad = name.size() > 10 && name.compare(name.size() - 10, 10, "_bias_grad") == 0;
  for (const MemoryBoundTable& t : profile_.memory_bound) {
    if ((bias_grad && t.kernel == "bias_grad") || (name.rfind("dropout_residual", 0) == 0 && t.kernel == "residual") ||
        (name.rfind("rotary", 0) == 0 && t.kernel == "rotary")) {
      return interpolate_table(t, op.bytes);
    }
  }
  if (copy_ == nullptr) {  // a partial profile: no memory-bound table at all
    not_measured("memory-bound kernels", "no memory-bound table");
    return fallback_.memory_bound_op_s(op);
  }
  std::string kernel;
  if (name.rfind("norm", 0) == 0 || name.rfind("final_norm", 0) == 0) kernel = "layernorm";
  else if (name.rfind("gelu", 0) == 0) kernel = "gelu";
  else if (name.rfind("swiglu", 0) == 0) kernel = "swiglu";
  else if (name.rfind("softmax", 0) == 0) kernel = "softmax";
  else if (name.rfind("cross_entropy", 0) == 0) kernel = "cross_entropy";
  if (!kernel.empty()) {
    if (backward) kernel += "_bwd";
    for (const MemoryBoundTable& t : profile_.memory_bound) {
      if (t.kernel == kernel) return interpolate_table(t, op.bytes);
    }
  }
  return memory_bound_s(op.bytes);
}

// The CPU calibrator times the runtime's own update ("adamw", 34 bytes per parameter as the
// simulator counts); the GPU calibrator an AdamW kernel ("adam", 7 fp32 accesses per parameter).
double ProfiledCostModel::optimizer_s(double params) const {
  for (const MemoryBoundTable& t : profile_.memory_bound) {
    if (t.kernel == "adamw") return interpolate_table(t, params * kAdamBytesPerParam);
  }
  for (const MemoryBoundTable& t : profile_.memory_bound) {
    if (t.kernel == "adam") return interpolate_table(t, params * 28.0);
  }
  if (copy_ == nullptr) {
    not_measured("optimizer", "no adam table");
    return fallback_.optimizer_s(params);
  }
  return CostModel::optimizer_s(params);
}

double ProfiledCostModel::collective_s(CollectiveKind kind, double bytes, const GroupScope& scope) const {
  if (scope.size <= 1 || bytes <= 0) return 0.0;
  const std::string name = collective_name(kind);
  for (const CollectiveTable& t : profile_.collectives) {
    if (t.kind != name || t.ranks != scope.size || t.nodes != scope.nodes) continue;
    std::vector<double> b, s;
    for (const CollectivePoint& p : t.points) {
      b.push_back(p.bytes);
      s.push_back(p.timing.median_s);
    }
    if (auto inside = interpolate_bytes(b, s, bytes)) return *inside;
    const std::string what = name + " of " + std::to_string(static_cast<int64_t>(bytes)) + " bytes over " +
                             std::to_string(scope.size) + " ranks is outside the measured sizes";
    if (!allow_extrapolation_) refuse(what);
    note(name + " over " + std::to_string(scope.size) + " ranks beyond the measured sizes (alpha-beta fit)");
    return t.fit.alpha_s + t.fit.beta_s_per_byte * bytes;
  }
  not_measured("collectives", "no " + name + " table for " + std::to_string(scope.size) + " ranks on " +
                                  std::to_string(scope.nodes) + " node(s)");
  return fallback_.collective_s(kind, bytes, scope);
}

std::string ProfiledCostModel::describe() const {
  return "profile " + source_ + " (" + profile_.provenance.device + ", " + profile_.provenance.date_utc + ")";
}

}  // namespace trainsim
