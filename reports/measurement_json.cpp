// Measurement <-> `trainsim.measurement` JSON. Per-iteration phases use the runtime's own names
// (forward_s, backward_s, tp_comm_s, ...); the top-level breakdown uses predict's names, as the
// PhaseBreakdown fields are named (common/phase_breakdown.hpp).
#include "reports/measurement_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "reports/json_output.hpp"
#include "reports/op_category_json.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

namespace {

const char* const kHint = "a trainsim.measurement file is what `trainsim run ... --out FILE` writes";

void put_phase_times(nlohmann::ordered_json& j, const PhaseBreakdown& p) {
  j["forward_s"] = p.forward_s;
  j["backward_s"] = p.backward_s;
  j["tp_comm_s"] = p.tp_comm_exposed_s;
  j["dp_comm_s"] = p.dp_comm_exposed_s;
  j["pp_comm_s"] = p.pp_comm_exposed_s;
  j["bubble_s"] = p.bubble_s;
  j["optimizer_s"] = p.optimizer_s;
}

PhaseBreakdown read_phase_times(JsonObjectReader& r) {
  PhaseBreakdown p;
  p.forward_s = r.required_number("forward_s", 0);
  p.backward_s = r.required_number("backward_s", 0);
  p.tp_comm_exposed_s = r.required_number("tp_comm_s", 0);
  p.dp_comm_exposed_s = r.required_number("dp_comm_s", 0);
  p.pp_comm_exposed_s = r.required_number("pp_comm_s", 0);
  p.bubble_s = r.required_number("bubble_s", 0);
  p.optimizer_s = r.required_number("optimizer_s", 0);
  p.compute_s = p.forward_s + p.backward_s;
  return p;
}

// The median phases in predict's vocabulary: `breakdown` (compute = forward + backward) and
// `compute_split` (its halves), checked against each other.
PhaseBreakdown read_breakdown(JsonObjectReader& root) {
  PhaseBreakdown p;
  JsonObjectReader split = root.required_object("compute_split");
  p.forward_s = split.required_number("forward_s", 0);
  p.backward_s = split.required_number("backward_s", 0);
  JsonObjectReader b = root.required_object("breakdown");
  const double compute_s = b.required_number("compute_s", 0);
  p.tp_comm_exposed_s = b.required_number("tp_comm_exposed_s", 0);
  p.dp_comm_exposed_s = b.required_number("dp_comm_exposed_s", 0);
  p.pp_comm_exposed_s = b.required_number("pp_comm_exposed_s", 0);
  p.bubble_s = b.required_number("bubble_s", 0);
  p.optimizer_s = b.required_number("optimizer_s", 0);
  const double sum_s = p.forward_s + p.backward_s;
  p.compute_s = sum_s;  // as the runtime summed it (the file's figure is checked against it below)
  if (b.ok() && split.ok() && std::fabs(compute_s - sum_s) > 1e-9 * std::max(compute_s, sum_s) + 1e-15) {
    b.add_problem("compute_s", "compute_s (" + nlohmann::json(compute_s).dump() +
                                   ") must equal compute_split forward_s + backward_s (" + nlohmann::json(sum_s).dump() + ")");
  }
  return p;
}

IterationRecord read_iteration(JsonObjectReader& r) {
  IterationRecord it;
  it.iteration = r.required_int("iteration", 0);
  // A loss that was not finite is written as null (JSON has no NaN) and reads back as NaN.
  it.loss = r.optional_number("loss", std::numeric_limits<double>::lowest())
                .value_or(std::numeric_limits<double>::quiet_NaN());
  it.time_s = r.required_number("time_s", 0);
  it.phases = read_phase_times(r);
  it.page_faults = r.optional_int("page_faults", 0).value_or(0);
  it.system_s = r.optional_number("system_s", 0).value_or(0.0);
  return it;
}

}  // namespace

nlohmann::ordered_json measurement_json(const Measurement& m, nlohmann::ordered_json inputs) {
  nlohmann::ordered_json doc = json_envelope(kMeasurementSchema, std::move(inputs));
  doc["ranks"] = m.ranks;
  doc["backend"] = m.backend;
  doc["warmup_iterations"] = m.warmup_iterations;
  doc["iteration_time_s"] = m.iteration_time_s;
  doc["memory_peak_gib"] = m.memory_peak_gib;
  doc["memory_rss_peak_gib"] = m.memory_rss_peak_gib;
  doc["memory_note"] = "memory_peak_gib: the runtime's own allocations at their peak (weights, gradients, optimizer "
                       "states, activations, buffers), comparable with predict's memory; memory_rss_peak_gib: the "
                       "process's resident set (also the program, the communication library and the data)";
  const PhaseBreakdown& b = m.breakdown;
  doc["breakdown"] = {{"compute_s", b.compute_s}, {"tp_comm_exposed_s", b.tp_comm_exposed_s},
                      {"dp_comm_exposed_s", b.dp_comm_exposed_s},        {"pp_comm_exposed_s", b.pp_comm_exposed_s},
                      {"bubble_s", b.bubble_s},                  {"optimizer_s", b.optimizer_s}};
  doc["compute_split"] = {{"forward_s", b.forward_s}, {"backward_s", b.backward_s}};
  // Only what was measured: the CUDA backend times no op categories and counts no page faults yet.
  if (!m.op_categories.empty()) {
    doc["op_categories"] = op_categories_json(m.op_categories);
    doc["op_categories_note"] = "per pipeline stage (TP rank 0 of DP replica 0): median seconds per iteration of each op "
                                "category, forward and backward (recomputation in backward); other = compute time outside "
                                "every timed op (temporaries, copies, allocation and its page faults)";
  }
  if (m.backend == "cpu") {
    doc["page_faults_per_iteration"] = m.page_faults_per_iteration;
    doc["system_s_per_iteration"] = m.system_s_per_iteration;
  }
  if (m.checkpoint_saves > 0 || m.checkpoint_load_s > 0) {
    doc["checkpoint"] = {{"saves", m.checkpoint_saves}, {"save_s", m.checkpoint_save_s}, {"load_s", m.checkpoint_load_s},
                         {"written_per_rank_bytes", m.checkpoint_bytes_per_rank}};
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const IterationRecord& it : m.iterations) {
    nlohmann::ordered_json j;
    j["iteration"] = it.iteration;
    j["loss"] = std::isfinite(it.loss) ? nlohmann::ordered_json(it.loss) : nlohmann::ordered_json(nullptr);
    j["time_s"] = it.time_s;
    put_phase_times(j, it.phases);
    if (m.backend == "cpu") {
      j["page_faults"] = it.page_faults;
      j["system_s"] = it.system_s;
    }
    list.push_back(std::move(j));
  }
  doc["iterations"] = std::move(list);
  return doc;
}

Measurement read_measurement(const nlohmann::json& doc, const std::string& file, ProblemList& problems) {
  require_envelope(doc, file, kMeasurementSchema, kHint);
  JsonObjectReader root(doc, file, "", problems);
  Measurement m;
  m.ranks = root.required_int("ranks", 1);
  m.backend = root.required_choice("backend", {"cpu", "cuda", "trace"});
  m.warmup_iterations = root.required_int("warmup_iterations", 0);
  m.iteration_time_s = root.required_number("iteration_time_s", 0);
  if (m.iteration_time_s == 0 && doc.contains("iteration_time_s") && doc["iteration_time_s"].is_number()) {
    root.add_problem("iteration_time_s", "iteration_time_s (0) must be > 0 (a measured iteration takes time)");
  }
  m.memory_peak_gib = root.required_number("memory_peak_gib", 0);
  m.memory_rss_peak_gib = root.optional_number("memory_rss_peak_gib", 0).value_or(0.0);
  root.optional_string("memory_note");
  m.breakdown = read_breakdown(root);
  m.op_categories = read_op_categories(root);
  root.optional_string("op_categories_note");
  m.page_faults_per_iteration = root.optional_number("page_faults_per_iteration", 0).value_or(0.0);
  m.system_s_per_iteration = root.optional_number("system_s_per_iteration", 0).value_or(0.0);
  if (std::optional<JsonObjectReader> c = root.optional_object("checkpoint")) {
    m.checkpoint_saves = c->required_int("saves", 0);
    m.checkpoint_save_s = c->required_number("save_s", 0);
    m.checkpoint_load_s = c->required_number("load_s", 0);
    m.checkpoint_bytes_per_rank = c->required_number("written_per_rank_bytes", 0);
  }
  if (m.backend == "trace") root.optional_object("trace");  // what `trace --out` adds: device, ranks, notes
  for (JsonObjectReader& element : root.required_object_list("iterations")) {
    m.iterations.push_back(read_iteration(element));
  }
  return m;
}

std::string measurement_summary(const Measurement& m, const std::string& out_path) {
  const PhaseBreakdown& b = m.breakdown;
  std::ostringstream out;
  out << "median iteration " << format_fixed(m.iteration_time_s, 4) << " s over " << m.iterations.size() - static_cast<size_t>(m.warmup_iterations)
      << " timed steps; forward " << format_fixed(b.forward_s, 4) << ", backward " << format_fixed(b.backward_s, 4) << ", TP "
      << format_fixed(b.tp_comm_exposed_s, 4) << ", DP " << format_fixed(b.dp_comm_exposed_s, 4) << ", PP "
      << format_fixed(b.pp_comm_exposed_s, 4) << ", waiting " << format_fixed(b.bubble_s, 4) << ", optimizer "
      << format_fixed(b.optimizer_s, 4) << " s; peak memory " << format_fixed(m.memory_peak_gib, 3) << " GiB"
      << (m.backend == "cpu" ? "; " + std::to_string(static_cast<int64_t>(m.page_faults_per_iteration)) + " page faults per iteration (rank 0)"
                             : std::string())
      << "\nloss " << format_fixed(m.iterations.front().loss, 4) << " -> " << format_fixed(m.iterations.back().loss, 4)
      << "; measurement written to " << out_path << "\n";
  return out.str();
}

Measurement read_measurement(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  ProblemList problems;
  Measurement m = read_measurement(doc, path, problems);
  problems.throw_if_any(kHint);
  return m;
}

}  // namespace trainsim
