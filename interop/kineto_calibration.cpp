// GEMM kernel time by launching op's shape, from Kineto traces.
#include "interop/kineto_calibration.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <tuple>

#include "common/errors.hpp"
#include "interop/kineto_summary.hpp"

namespace trainsim {

namespace {

std::string dtype_of(const std::string& input_type) {
  if (input_type == "c10::BFloat16") return "bf16";
  if (input_type == "c10::Half") return "fp16";
  if (input_type == "float") return "fp32";
  if (input_type.rfind("c10::Float8_e4m3", 0) == 0 || input_type.rfind("c10::Float8_e5m2", 0) == 0) return "fp8";
  return "";
}

int64_t product_but_last(const std::vector<int64_t>& d) {
  return std::accumulate(d.begin(), d.end() - 1, int64_t{1}, [](int64_t a, int64_t b) { return a * b; });
}

}  // namespace

bool gemm_shape_of(const TraceCpuOp& op, OpGemmShape& s) {
  const auto& d = op.input_dims;
  const auto& types = op.input_types;
  auto fill = [&](size_t a, size_t b, bool transposed_b) {
    if (d.size() <= std::max(a, b) || d[a].size() < 2 || d[b].size() < 2) return false;
    const auto& x = d[a];
    const auto& w = d[b];
    if (transposed_b) {  // linear: weight [out, in]
      if (w.size() != 2 || x.back() != w[1]) return false;
      s.m = product_but_last(x);
      s.k = x.back();
      s.n = w[0];
    } else if (x.size() == 3 && w.size() == 3) {  // bmm: [b, m, k] . [b, k, n]
      if (x[0] != w[0] || x[2] != w[1]) return false;
      s.m = x[0] * x[1];
      s.k = x[2];
      s.n = w[2];
    } else if (w.size() == 2) {  // [..., m, k] . [k, n]
      if (x.back() != w[0]) return false;
      s.m = product_but_last(x);
      s.k = x.back();
      s.n = w[1];
    } else {
      return false;
    }
    s.dtype = types.size() > a ? dtype_of(types[a]) : "";
    return s.m > 0 && s.n > 0 && s.k > 0;
  };
  if (op.name == "aten::mm" || op.name == "aten::bmm" || op.name == "aten::matmul" || op.name == "aten::_scaled_mm") return fill(0, 1, false);
  if (op.name == "aten::addmm" || op.name == "aten::baddbmm") return fill(1, 2, false);
  if (op.name == "aten::linear") return fill(0, 1, true);
  return false;
}

bool attention_shape_of(const TraceCpuOp& op, OpAttentionShape& s) {
  size_t q = 0, causal = 0;
  bool bshd = true;  // q's layout: [b, s, h, d], else [b, h, s, d]
  if (op.name == "aten::_flash_attention_forward") causal = 8;
  else if (op.name == "aten::_flash_attention_backward") q = 1, causal = 11;
  else if (op.name == "aten::_scaled_dot_product_flash_attention") causal = 4, bshd = false;
  else return false;
  if (op.input_dims.size() <= q || op.input_dims[q].size() != 4 || op.concrete_inputs.size() <= causal) return false;
  const auto& d = op.input_dims[q];
  const std::string& c = op.concrete_inputs[causal];
  if (c != "True" && c != "False") return false;
  s.batch_heads = d[0] * (bshd ? d[2] : d[1]);
  s.seq = bshd ? d[1] : d[2];
  s.head_dim = d[3];
  s.causal = c == "True";
  s.backward = op.name == "aten::_flash_attention_backward";
  s.dtype = op.input_types.size() > q ? dtype_of(op.input_types[q]) : "";
  return s.batch_heads > 0 && s.seq > 0 && s.head_dim > 0 && !s.dtype.empty();
}

std::string file_fnv1a64(const std::string& path, int64_t& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the trace file (missing or unreadable)", "give the path of a trace");
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64 offset basis and prime (the checkpoint format's checksum)
  bytes = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ULL;
    }
    bytes += n;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

TraceCalibration calibrate_from_traces(const std::vector<std::string>& paths) {
  TraceCalibration c;
  ProfileProvenance& pv = c.profile.provenance;
  pv.device_kind = "gpu";
  pv.devices = static_cast<int64_t>(paths.size());
  // (dtype, m, n, k) -> seconds of each launching op instance, and the op's name.
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, std::vector<double>> times;
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, std::string> op_names;
  // (dtype, batch x heads, seq, head_dim, causal, backward) -> seconds of each launching op instance.
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t, bool, bool>, std::vector<double>> attention_times;
  for (const std::string& path : paths) {
    const KinetoTrace t = read_kineto_trace(path);
    if (t.device_name.empty()) {
      throw InputError(path + ": the trace has no deviceProperties[].name, so the GPU it measured is unknown",
                       "calibrate from a trace written by torch.profiler with CUDA activity (PyTorch >= 1.10 writes deviceProperties)");
    }
    if (pv.device.empty()) {
      pv.device = t.device_name;
      pv.sm_count = t.device_sm_count;
      pv.memory_bytes = t.device_memory_bytes;
    }
    if (pv.device != t.device_name) {
      throw InputError(path + ": measured on " + t.device_name + ", the earlier traces on " + pv.device,
                       "a profile describes one GPU type: calibrate from the traces of one GPU type at a time");
    }
    ProfileProvenance::SourceFile f;
    f.path = path;
    f.fnv1a64 = file_fnv1a64(path, f.bytes);
    pv.traces.push_back(f);
    std::map<const TraceCpuOp*, double> per_op;  // GEMM kernel time of each launching op instance (split-K: several kernels)
    std::map<const TraceCpuOp*, double> per_attention_op;
    for (const TraceKernel& k : t.kernels) {
      if (kernel_category(k.name) == "attention") {
        c.attention_kernels += 1;
        const TraceCpuOp* op = launching_cpu_op(t, k);
        OpAttentionShape a;
        if (op == nullptr || !attention_shape_of(*op, a)) continue;
        c.attention_kernels_with_shape += 1;
        per_attention_op[op] += k.dur_us * 1e-6;
        continue;
      }
      if (kernel_category(k.name) != "gemm") continue;
      c.gemm_kernels += 1;
      c.gemm_kernel_s += k.dur_us * 1e-6;
      const TraceCpuOp* op = launching_cpu_op(t, k);
      OpGemmShape s;
      if (op == nullptr || !gemm_shape_of(*op, s) || s.dtype.empty()) continue;
      c.gemm_kernels_with_shape += 1;
      c.gemm_kernel_with_shape_s += k.dur_us * 1e-6;
      per_op[op] += k.dur_us * 1e-6;
    }
    for (const auto& [op, seconds] : per_op) {
      OpGemmShape s;
      gemm_shape_of(*op, s);
      const auto key = std::make_tuple(s.dtype, s.m, s.n, s.k);
      times[key].push_back(seconds);
      std::string& names = op_names[key];  // the ops that ran this shape, in order of first sight
      if (("," + names + ",").find("," + op->name + ",") == std::string::npos) names += (names.empty() ? "" : ",") + op->name;
    }
    for (const auto& [op, seconds] : per_attention_op) {
      OpAttentionShape a;
      attention_shape_of(*op, a);
      attention_times[std::make_tuple(a.dtype, a.batch_heads, a.seq, a.head_dim, a.causal, a.backward)].push_back(seconds);
    }
  }
  if (times.empty()) {  // attention alone is no profile: predictions are mostly GEMMs
    throw InputError(paths.front() + (paths.size() > 1 ? " (and the other traces)" : "") + ": no GEMM kernel could be tied to an input shape (" +
                         std::to_string(c.gemm_kernels) + " GEMM kernels, none launched by an aten::mm / addmm / bmm / matmul / linear op with Input Dims)",
                     "profile with torch.profiler.profile(..., record_shapes=True) so each CPU op records its input shapes");
  }
  for (const auto& [key, seconds] : times) {
    const auto& [dtype, m, n, k] = key;
    GemmShapeTable* table = nullptr;
    for (GemmShapeTable& g : c.profile.gemm_shapes) {
      if (g.dtype == dtype) table = &g;
    }
    if (table == nullptr) {
      c.profile.gemm_shapes.push_back({dtype, {}});
      table = &c.profile.gemm_shapes.back();
    }
    table->points.push_back({m, n, k, op_names[key], summarize_samples(seconds)});
  }
  for (const auto& [key, seconds] : attention_times) {
    const auto& [dtype, batch_heads, seq, head_dim, causal, backward] = key;
    AttentionTable* table = nullptr;
    for (AttentionTable& a : c.profile.attention) {
      if (a.dtype == dtype) table = &a;
    }
    if (table == nullptr) {
      c.profile.attention.push_back({dtype, "flash (profiler trace)", {}});
      table = &c.profile.attention.back();
    }
    table->points.push_back({batch_heads, seq, head_dim, causal, backward, summarize_samples(seconds)});
  }
  c.profile.partial = true;
  pv.method = "PyTorch profiler trace(s): the GPU time of each GEMM kernel (by name), tied to the CPU op that launched it "
              "(External id / correlation) and that op's Input Dims; per launching op the sum of its GEMM kernels, the median "
              "(p10, p90) over the op's repeats per dtype and shape";
  char line[256];
  std::snprintf(line, sizeof line, "GEMM kernels with a shape: %lld of %lld (%.1f of %.1f ms)",
                static_cast<long long>(c.gemm_kernels_with_shape), static_cast<long long>(c.gemm_kernels),
                c.gemm_kernel_with_shape_s * 1e3, c.gemm_kernel_s * 1e3);
  c.profile.notes.push_back(line);
  std::snprintf(line, sizeof line, "attention kernels with a shape: %lld of %lld",
                static_cast<long long>(c.attention_kernels_with_shape), static_cast<long long>(c.attention_kernels));
  c.profile.notes.push_back(line);
  c.profile.notes.push_back("partial profile: attention shapes the traces did not run, memory-bound kernels, collectives and the optimizer are not measured "
                            "(predict prices them with the datasheet + reference model and lists them); GEMM shapes not in "
                            "gemm_shapes are priced at the FLOP rate of the nearest measured shape in log (m, n, k), listed");
  return c;
}

}  // namespace trainsim
