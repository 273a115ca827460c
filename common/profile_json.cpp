// Profile writing and strict reading.
#include "common/profile_json.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include "common/json_reader.hpp"

namespace trainsim {

namespace {

nlohmann::ordered_json timing_json(const Timing& t) {
  return {{"median_s", t.median_s}, {"p10_s", t.p10_s}, {"p90_s", t.p90_s}, {"samples", t.samples}};
}

Timing read_timing(JsonObjectReader& r) {
  Timing t;
  t.median_s = r.optional_number("median_s", 0.0).value_or(0.0);
  t.p10_s = r.optional_number("p10_s", 0.0).value_or(0.0);
  t.p90_s = r.optional_number("p90_s", 0.0).value_or(0.0);
  t.samples = r.required_int("samples", 1);
  if (!(t.median_s > 0) || !std::isfinite(t.median_s)) {
    r.add_problem("median_s", "must be a positive, finite number of seconds (missing data is never zero)");
  }
  if (t.p10_s > t.median_s || t.median_s > t.p90_s) r.add_problem("median_s", "needs p10_s <= median_s <= p90_s");
  return t;
}

// Reads doc[key] as an array of objects; `read_row` gets each row's reader and its JSON.
// The "timing" object of a point (required).
Timing read_timing_of(JsonObjectReader& point) {
  auto timing = point.optional_object("timing");
  if (!timing) {
    point.add_problem("timing", "missing");
    return {};
  }
  Timing t = read_timing(*timing);
  timing->reject_unknown_keys();
  return t;
}

template <typename Row>
std::vector<Row> read_array(JsonObjectReader& parent, const nlohmann::json& doc, const std::string& key,
                            const std::function<Row(JsonObjectReader&, const nlohmann::json&)>& read_row) {
  std::vector<Row> rows;
  parent.accept(key);
  if (!doc.contains(key) || doc[key].is_null()) return rows;
  if (!doc[key].is_array()) {
    parent.add_problem(key, "expected an array");
    return rows;
  }
  for (size_t i = 0; i < doc[key].size(); ++i) {
    JsonObjectReader row(doc[key][i], parent.file(), parent.where(key).substr(parent.file().size() + 2) + "/" + std::to_string(i),
                         parent.problems());
    rows.push_back(read_row(row, doc[key][i]));
    row.reject_unknown_keys();
  }
  return rows;
}

std::vector<int64_t> int_list(JsonObjectReader& r, const nlohmann::json& doc, const std::string& key) {
  std::vector<int64_t> out;
  r.accept(key);
  if (!doc.contains(key) || !doc[key].is_array()) {
    r.add_problem(key, "missing array of the measured values");
    return out;
  }
  for (const auto& v : doc[key]) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
      r.add_problem(key, "values must be positive integers");
      return {};
    }
    out.push_back(v.get<int64_t>());
  }
  if (!std::is_sorted(out.begin(), out.end()) || std::adjacent_find(out.begin(), out.end()) != out.end()) {
    r.add_problem(key, "values must be strictly increasing");
  }
  return out;
}

GemmTable read_gemm(JsonObjectReader& r, const nlohmann::json& doc) {
  GemmTable t;
  t.dtype = r.required_choice("dtype", {"bf16", "fp16", "tf32", "fp32", "fp8"});
  t.m_values = int_list(r, doc, "m_values");
  t.n_values = int_list(r, doc, "n_values");
  t.k_values = int_list(r, doc, "k_values");
  t.points = read_array<GemmPoint>(r, doc, "points", [](JsonObjectReader& p, const nlohmann::json&) {
    GemmPoint g;
    g.m = p.required_int("m", 1);
    g.n = p.required_int("n", 1);
    g.k = p.required_int("k", 1);
    p.accept("tflops");  // derived from the timing, for people reading the file
    g.timing = read_timing_of(p);
    return g;
  });
  std::set<std::tuple<int64_t, int64_t, int64_t>> have;
  for (const GemmPoint& g : t.points) have.insert({g.m, g.n, g.k});
  for (int64_t m : t.m_values) {
    for (int64_t n : t.n_values) {
      for (int64_t k : t.k_values) {
        if (!have.count({m, n, k})) {
          r.add_problem("points", "the grid has no point for m=" + std::to_string(m) + ", n=" + std::to_string(n) +
                                      ", k=" + std::to_string(k) + " (every combination of m_values, n_values, k_values is needed)");
          return t;
        }
      }
    }
  }
  return t;
}

void check_increasing_bytes(JsonObjectReader& r, const std::vector<double>& bytes) {
  if (bytes.size() < 2) r.add_problem("points", "needs at least two sizes");
  for (size_t i = 1; i < bytes.size(); ++i) {
    if (!(bytes[i] > bytes[i - 1])) {
      r.add_problem("points", "sizes must be strictly increasing (point " + std::to_string(i) + ")");
      return;
    }
  }
}

}  // namespace

nlohmann::ordered_json profile_to_json(const HardwareProfile& p) {
  nlohmann::ordered_json j;
  j["schema"] = "trainsim.hardware_profile";
  j["schema_version"] = 1;
  const ProfileProvenance& v = p.provenance;
  j["provenance"] = {{"device_kind", v.device_kind}, {"device", v.device},   {"devices", v.devices},
                     {"sm_count", v.sm_count},       {"cores", v.cores},     {"memory_bytes", v.memory_bytes},     {"driver", v.driver},
                     {"cuda", v.cuda},               {"cublas", v.cublas},   {"nccl", v.nccl},
                     {"mpi", v.mpi},                 {"eigen", v.eigen},     {"clocks", v.clocks},
                     {"host", v.host},               {"date_utc", v.date_utc}, {"tool_version", v.tool_version},
                     {"git_revision", v.git_revision}, {"method", v.method}};
  if (!v.traces.empty()) {
    nlohmann::ordered_json traces = nlohmann::ordered_json::array();
    for (const auto& f : v.traces) traces.push_back({{"path", f.path}, {"fnv1a64", f.fnv1a64}, {"bytes", f.bytes}});
    j["provenance"]["traces"] = traces;
  }
  if (p.partial) j["partial"] = true;
  nlohmann::ordered_json gemm = nlohmann::ordered_json::array();
  for (const GemmTable& t : p.gemm) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const GemmPoint& g : t.points) {
      const double tflops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) / g.timing.median_s / 1e12;
      points.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"timing", timing_json(g.timing)}, {"tflops", tflops}});
    }
    gemm.push_back({{"dtype", t.dtype}, {"m_values", t.m_values}, {"n_values", t.n_values}, {"k_values", t.k_values}, {"points", points}});
  }
  j["gemm"] = gemm;
  if (!p.gemm_shapes.empty()) {
    nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
    for (const GemmShapeTable& t : p.gemm_shapes) {
      nlohmann::ordered_json points = nlohmann::ordered_json::array();
      for (const GemmShapePoint& g : t.points) {
        const double tflops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) / g.timing.median_s / 1e12;
        points.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"op", g.op}, {"timing", timing_json(g.timing)}, {"tflops", tflops}});
      }
      shapes.push_back({{"dtype", t.dtype}, {"points", points}});
    }
    j["gemm_shapes"] = shapes;
  }
  nlohmann::ordered_json attention = nlohmann::ordered_json::array();
  for (const AttentionTable& t : p.attention) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const AttentionPoint& a : t.points) {
      points.push_back({{"batch_heads", a.batch_heads}, {"seq", a.seq}, {"head_dim", a.head_dim}, {"causal", a.causal},
                        {"backward", a.backward}, {"timing", timing_json(a.timing)}});
    }
    attention.push_back({{"dtype", t.dtype}, {"kernel", t.kernel}, {"points", points}});
  }
  j["attention"] = attention;
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (const MemoryBoundTable& t : p.memory_bound) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const MemoryBoundPoint& m : t.points) {
      points.push_back({{"bytes", m.bytes}, {"timing", timing_json(m.timing)}, {"gb_per_s", m.bytes / m.timing.median_s / 1e9}});
    }
    memory.push_back({{"kernel", t.kernel}, {"points", points}});
  }
  j["memory_bound"] = memory;
  nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
  for (const CollectiveTable& t : p.collectives) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const CollectivePoint& c : t.points) {
      points.push_back({{"bytes", c.bytes}, {"timing", timing_json(c.timing)}, {"algbw_gb_per_s", c.algbw_gb_per_s},
                        {"busbw_gb_per_s", c.busbw_gb_per_s}});
    }
    collectives.push_back({{"kind", t.kind}, {"ranks", t.ranks}, {"ranks_per_node", t.ranks_per_node}, {"nodes", t.nodes},
                           {"size_convention", "bytes = the whole n-rank buffer S (nccl-tests)"},
                           {"points", points},
                           {"fit", {{"alpha_s", t.fit.alpha_s}, {"beta_s_per_byte", t.fit.beta_s_per_byte},
                                    {"residual_rms_rel", t.fit.residual_rms_rel}}}});
  }
  j["collectives"] = collectives;
  nlohmann::ordered_json overlap = nlohmann::ordered_json::array();
  for (const OverlapPoint& o : p.overlap) overlap.push_back({{"collective", o.collective}, {"gemm_slowdown", o.gemm_slowdown}});
  j["overlap"] = overlap;
  j["notes"] = p.notes;
  return j;
}

namespace {

void read_provenance(JsonObjectReader& r, const nlohmann::json& doc, ProfileProvenance& pv) {
  auto v = r.optional_object("provenance");
  if (!v) {
    r.add_problem("provenance", "missing: a profile must say what it measured");
    return;
  }
  pv.device_kind = v->required_choice("device_kind", {"gpu", "cpu"});
  pv.device = v->required_string("device");
  pv.devices = v->optional_int("devices", 1).value_or(1);
  pv.sm_count = v->optional_int("sm_count", 0).value_or(0);
  pv.cores = v->optional_int("cores", 0).value_or(0);
  pv.memory_bytes = v->optional_number("memory_bytes", 0.0).value_or(0.0);
  for (auto [key, field] : {std::pair{"driver", &pv.driver}, {"cuda", &pv.cuda}, {"cublas", &pv.cublas}, {"nccl", &pv.nccl},
                            {"mpi", &pv.mpi}, {"eigen", &pv.eigen}, {"clocks", &pv.clocks}, {"host", &pv.host},
                            {"date_utc", &pv.date_utc}, {"tool_version", &pv.tool_version},
                            {"git_revision", &pv.git_revision}, {"method", &pv.method}}) {
    *field = v->optional_string(key).value_or("");
  }
  if (v->has("traces")) {
    pv.traces = read_array<ProfileProvenance::SourceFile>(*v, doc["provenance"], "traces", [](JsonObjectReader& q, const nlohmann::json&) {
      ProfileProvenance::SourceFile f;
      f.path = q.required_string("path");
      f.fnv1a64 = q.required_string("fnv1a64");
      f.bytes = q.required_int("bytes", 0);
      return f;
    });
  }
  v->reject_unknown_keys();
}

AttentionTable read_attention(JsonObjectReader& t, const nlohmann::json& row) {
  AttentionTable a;
  a.dtype = t.required_string("dtype");
  a.kernel = t.required_string("kernel");
  a.points = read_array<AttentionPoint>(t, row, "points", [](JsonObjectReader& q, const nlohmann::json&) {
    AttentionPoint pt;
    pt.batch_heads = q.required_int("batch_heads", 1);
    pt.seq = q.required_int("seq", 1);
    pt.head_dim = q.required_int("head_dim", 1);
    pt.causal = q.optional_bool("causal").value_or(true);
    pt.backward = q.optional_bool("backward").value_or(false);
    pt.timing = read_timing_of(q);
    return pt;
  });
  return a;
}

MemoryBoundTable read_memory_bound(JsonObjectReader& t, const nlohmann::json& row) {
  MemoryBoundTable m;
  m.kernel = t.required_string("kernel");
  m.points = read_array<MemoryBoundPoint>(t, row, "points", [](JsonObjectReader& q, const nlohmann::json&) {
    MemoryBoundPoint pt;
    pt.bytes = q.optional_number("bytes", 1.0).value_or(0.0);
    q.accept("gb_per_s");  // derived, for people reading the file
    pt.timing = read_timing_of(q);
    return pt;
  });
  std::vector<double> bytes;
  for (const auto& pt : m.points) bytes.push_back(pt.bytes);
  check_increasing_bytes(t, bytes);
  return m;
}

CollectiveTable read_collective(JsonObjectReader& t, const nlohmann::json& row) {
  CollectiveTable c;
  c.kind = t.required_choice("kind", {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "send-recv"});
  c.ranks = t.required_int("ranks", 2);
  c.ranks_per_node = t.required_int("ranks_per_node", 1);
  c.nodes = t.required_int("nodes", 1);
  t.accept("size_convention");
  c.points = read_array<CollectivePoint>(t, row, "points", [](JsonObjectReader& q, const nlohmann::json&) {
    CollectivePoint pt;
    pt.bytes = q.optional_number("bytes", 1.0).value_or(0.0);
    pt.algbw_gb_per_s = q.optional_number("algbw_gb_per_s", 0.0).value_or(0.0);
    pt.busbw_gb_per_s = q.optional_number("busbw_gb_per_s", 0.0).value_or(0.0);
    pt.timing = read_timing_of(q);
    return pt;
  });
  std::vector<double> bytes;
  for (const auto& pt : c.points) bytes.push_back(pt.bytes);
  check_increasing_bytes(t, bytes);
  if (auto fit = t.optional_object("fit")) {
    c.fit.alpha_s = fit->optional_number("alpha_s", 0.0).value_or(0.0);
    c.fit.beta_s_per_byte = fit->optional_number("beta_s_per_byte", 0.0).value_or(0.0);
    c.fit.residual_rms_rel = fit->optional_number("residual_rms_rel", 0.0).value_or(0.0);
    fit->reject_unknown_keys();
  }
  return c;
}

void read_notes(JsonObjectReader& r, const nlohmann::json& doc, std::vector<std::string>& notes) {
  r.accept("notes");
  if (!doc.contains("notes") || doc["notes"].is_null()) return;
  if (!doc["notes"].is_array()) {
    r.add_problem("notes", "expected an array of strings");
    return;
  }
  for (const auto& n : doc["notes"]) {
    if (n.is_string()) notes.push_back(n.get<std::string>());
    else r.add_problem("notes", "expected strings, got " + n.dump());
  }
}

}  // namespace

HardwareProfile read_profile(const nlohmann::json& doc, const std::string& source) {
  ProblemList problems;
  JsonObjectReader r(doc, source, "", problems);
  HardwareProfile p;
  r.required_choice("schema", {"trainsim.hardware_profile"});
  if (r.has("schema_version") && doc["schema_version"] != 1) {
    r.add_problem("schema_version", "version " + doc["schema_version"].dump() + " is not supported (this trainsim reads 1)");
  }
  r.accept("schema_version");
  read_provenance(r, doc, p.provenance);
  p.gemm = read_array<GemmTable>(r, doc, "gemm", read_gemm);
  p.gemm_shapes = read_array<GemmShapeTable>(r, doc, "gemm_shapes", [](JsonObjectReader& t, const nlohmann::json& row) {
    GemmShapeTable g;
    g.dtype = t.required_choice("dtype", {"bf16", "fp16", "tf32", "fp32", "fp8"});
    g.points = read_array<GemmShapePoint>(t, row, "points", [](JsonObjectReader& p, const nlohmann::json&) {
      GemmShapePoint pt;
      pt.m = p.required_int("m", 1);
      pt.n = p.required_int("n", 1);
      pt.k = p.required_int("k", 1);
      pt.op = p.optional_string("op").value_or("");
      p.accept("tflops");  // derived from the timing, for people reading the file
      pt.timing = read_timing_of(p);
      return pt;
    });
    if (g.points.empty()) t.add_problem("points", "a measured-shapes table needs at least one point");
    return g;
  });
  p.partial = r.optional_bool("partial").value_or(false);
  p.attention = read_array<AttentionTable>(r, doc, "attention", read_attention);
  p.memory_bound = read_array<MemoryBoundTable>(r, doc, "memory_bound", read_memory_bound);
  p.collectives = read_array<CollectiveTable>(r, doc, "collectives", read_collective);
  p.overlap = read_array<OverlapPoint>(r, doc, "overlap", [](JsonObjectReader& q, const nlohmann::json&) {
    OverlapPoint o;
    o.collective = q.required_string("collective");
    o.gemm_slowdown = q.optional_number("gemm_slowdown", 0.0).value_or(1.0);
    return o;
  });
  read_notes(r, doc, p.notes);
  r.reject_unknown_keys();
  problems.throw_if_any("a profile comes from `trainsim calibrate {gpu|cpu} --out FILE`; re-run it rather than editing");
  return p;
}

HardwareProfile load_profile(const std::string& path) { return read_profile(load_json_file(path), path); }

}  // namespace trainsim
