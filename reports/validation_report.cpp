// Tables and JSON of `validate`.
#include "reports/validation_report.hpp"

#include <cctype>
#include <map>

#include "reports/json_output.hpp"
#include "reports/text_table.hpp"
#include "sim/validation_pairs.hpp"

namespace trainsim {

namespace {

// Appended rather than concatenated: GCC 12 warns (-Wrestrict, a false positive) on a literal +
// string inlined into the table code.
std::string signed_percent(double x) {
  std::string out = x >= 0 ? "+" : "";
  out.append(format_percent(x));
  return out;
}

// Reasons that differ only in their numbers share a line ("cp (N) ..."): digits become N.
std::string reason_class(const std::string& reason) {
  std::string out;
  for (size_t i = 0; i < reason.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(reason[i]))) {
      if (out.empty() || out.back() != 'N') out += 'N';
      while (i + 1 < reason.size() && (std::isdigit(static_cast<unsigned char>(reason[i + 1])) || reason[i + 1] == '.')) ++i;
    } else {
      out += reason[i];
    }
  }
  return out;
}

std::string runs_table(const ValidationResult& v) {
  TextTable t({{"run", TextTable::Align::kLeft}, {"half", TextTable::Align::kLeft}, {"measured tok/s/GPU"}, {"predicted"},
               {"error"}, {"memory GiB (kind)"}, {"predicted"}, {"error"}, {"fits"}});
  for (const RunResult& r : v.runs) {
    if (!r.predicted) continue;
    const PublishedRun& run = *r.run;
    const bool memory = r.memory_error.has_value();
    const std::string kind = run.memory_kind.empty() ? "peak" : run.memory_kind;
    t.add_row({run.id, r.in_fit_half ? "fit" : "held-out",
               run.measured_oom ? "OOM" : format_fixed(run.measured_tokens_per_s_per_gpu, 1),
               format_fixed(r.predicted_tokens_per_s_per_gpu, 1), r.error ? signed_percent(*r.error) : "-",
               memory ? format_fixed(*run.measured_memory_gib, 1) + " (" + kind + ")" : "-",
               memory ? format_fixed(*run.measured_memory_gib * (1 + *r.memory_error), 1) : "-",
               memory ? signed_percent(*r.memory_error) : "-", r.predicted_fits ? "yes" : "NO"});
  }
  return t.render();
}

std::string unsupported_list(const ValidationResult& v) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<int64_t, const RunResult*>> classes;
  for (const RunResult& r : v.runs) {
    if (r.predicted) continue;
    const std::string key = reason_class(r.run->unsupported);
    if (!classes.count(key)) order.push_back(key);
    auto& [count, first] = classes[key];
    if (count++ == 0) first = &r;
  }
  if (order.empty()) return "";
  std::string out = "unsupported runs, by reason (count, first run and its reason):\n";
  for (const std::string& key : order) {
    const auto& [count, first] = classes[key];
    out += "  " + std::to_string(count) + " x  " + first->run->id + ": " + first->run->unsupported + "\n";
  }
  return out;
}

void add_summary_row(TextTable& s, const ErrorSummary& g) {
  const bool has_error = g.count > 0, has_memory = g.memory_count > 0;
  s.add_row({g.name, std::to_string(g.count), std::to_string(g.unsupported), has_error ? format_percent(g.mean_abs_error) : "-",
             has_error ? format_percent(g.max_abs_error) : "-", std::to_string(g.memory_count),
             has_memory ? format_percent(g.memory_mean_abs_error) : "-",
             g.oom_runs > 0 ? std::to_string(g.oom_flagged) + " of " + std::to_string(g.oom_runs) : "-",
             std::to_string(g.ran_not_fitting)});
}

std::string summary_table(const ValidationResult& v) {
  TextTable s({{"summary", TextTable::Align::kLeft}, {"predicted"}, {"unsupported"}, {"mean |error|"}, {"max |error|"},
               {"memory runs"}, {"memory mean |error|"}, {"OOM flagged"}, {"ran, judged OOM"}});
  for (const ErrorSummary& g : v.groups) add_summary_row(s, g);
  s.add_rule();
  for (const ErrorSummary* g : {&v.fit_half, &v.held_out_half, &v.all}) add_summary_row(s, *g);
  return s.render();
}

std::string ratio(double x) {
  std::string out = "x";
  out.append(format_fixed(x, 3));
  return out;
}

const char* pair_title(PairKind kind) {
  return kind == PairKind::kGpu ? "same plan, two GPU types" : "same plan, two precisions";
}

// Pairs of one kind: each pair (with the per-run table) and the summary line.
std::string pairs_table(const ValidationResult& v, bool list_pairs) {
  TextTable s({{"pairs (predicted ratio / measured ratio - 1)", TextTable::Align::kLeft}, {"pairs"}, {"mean |error|"}, {"max |error|"},
               {"within 10%"}});
  std::string listed;
  for (const PairKind kind : {PairKind::kGpu, PairKind::kPrecision}) {
    const std::vector<RunPair> pairs = same_plan_pairs(v, kind);
    const PairSummary sum = summarize_pairs(pairs);
    s.add_row({pair_title(kind), std::to_string(sum.count), sum.count > 0 ? format_percent(sum.mean_abs_error) : "-",
               sum.count > 0 ? format_percent(sum.max_abs_error) : "-", std::to_string(sum.within_ten_percent)});
    if (!list_pairs || pairs.empty()) continue;
    TextTable t({{std::string(pair_title(kind)) + ": from", TextTable::Align::kLeft}, {"to", TextTable::Align::kLeft},
                 {"measured"}, {"predicted"}, {"error"}});
    for (const RunPair& p : pairs) {
      t.add_row({p.from->run->id, p.to->run->id, ratio(p.measured_ratio), ratio(p.predicted_ratio), signed_percent(p.error())});
    }
    listed += t.render() + "\n";
  }
  return listed + s.render();
}

// The group's error with the constants the build ships (the first summary's), beside its refits.
const ErrorSummary* shipped_group(const ValidationResult& v, const std::string& name) {
  for (const ErrorSummary& g : v.groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::string cross_validation_table(const std::vector<CrossValidatedGroup>& cv, const ValidationResult& v) {
  TextTable t({{"group", TextTable::Align::kLeft}, {"runs"}, {"shipped constants: mean |error|"}, {"fitted on all: mean |error|"},
               {"left out: mean |error|"}, {"max |error|"}, {"memory: fitted on all"}, {"memory: left out"}});
  double in_sum = 0, out_sum = 0, shipped_sum = 0;
  const auto memory = [](const ErrorSummary& s) { return s.memory_count > 0 ? format_percent(s.memory_mean_abs_error) : "-"; };
  for (const CrossValidatedGroup& c : cv) {
    in_sum += c.in_sample.mean_abs_error;
    out_sum += c.held_out.mean_abs_error;
    const ErrorSummary* shipped = shipped_group(v, c.held_out.name);
    shipped_sum += shipped != nullptr ? shipped->mean_abs_error : 0;
    t.add_row({c.held_out.name, std::to_string(c.held_out.count), shipped != nullptr ? format_percent(shipped->mean_abs_error) : "-",
               format_percent(c.in_sample.mean_abs_error),
               format_percent(c.held_out.mean_abs_error), format_percent(c.held_out.max_abs_error), memory(c.in_sample),
               memory(c.held_out)});
  }
  if (!cv.empty()) {
    t.add_rule();
    const double n = static_cast<double>(cv.size());
    t.add_row({"mean over groups", "", format_percent(shipped_sum / n), format_percent(in_sum / n), format_percent(out_sum / n), "", "", ""});
  }
  return "leave-one-group-out (shipped: the constants this build uses; then refitted on all groups, and without each group in turn;\n"
         "groups weighted equally; every run of the group, both halves):\n" + t.render();
}

nlohmann::ordered_json summary_json(const ErrorSummary& s) {
  nlohmann::ordered_json j = {{"name", s.name}, {"count", s.count}, {"mean_abs_error", s.mean_abs_error},
                              {"max_abs_error", s.max_abs_error}, {"unsupported", s.unsupported},
                              {"memory_count", s.memory_count}};
  if (s.memory_count > 0) j["memory_mean_abs_error"] = s.memory_mean_abs_error;
  j["oom_runs"] = s.oom_runs;
  j["oom_flagged"] = s.oom_flagged;
  j["ran_not_fitting"] = s.ran_not_fitting;
  return j;
}

nlohmann::ordered_json run_json(const RunResult& r) {
  const PublishedRun& run = *r.run;
  nlohmann::ordered_json j = {{"id", run.id}, {"group", run.group}, {"framework", run.framework},
                              {"half", r.in_fit_half ? "fit" : "held-out"}, {"status", r.predicted ? "predicted" : "unsupported"}};
  if (!r.predicted) {
    j["reason"] = run.unsupported;
    return j;
  }
  j["predicted_tokens_per_s_per_gpu"] = r.predicted_tokens_per_s_per_gpu;
  j["measured_tokens_per_s_per_gpu"] = run.measured_oom ? nlohmann::ordered_json() : nlohmann::ordered_json(run.measured_tokens_per_s_per_gpu);
  j["error"] = r.error ? nlohmann::ordered_json(*r.error) : nlohmann::ordered_json();
  j["predicted_iteration_time_s"] = r.predicted_iteration_time_s;
  j["predicted_memory_peak_gib"] = r.predicted_memory_peak_gib;
  j["predicted_memory_reserved_gib"] = r.predicted_memory_reserved_gib;
  if (r.memory_error) {
    j["measured_memory_gib"] = *run.measured_memory_gib;
    j["memory_kind"] = run.memory_kind.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(run.memory_kind);
    j["memory_error"] = *r.memory_error;
  }
  j["predicted_fits"] = r.predicted_fits;
  j["measured_oom"] = run.measured_oom;
  j["options_not_modeled"] = run.options_not_modeled;
  j["defaults_used"] = run.defaults_used;
  return j;
}

}  // namespace

nlohmann::ordered_json constants_json(const EfficiencyConstants& c) {
  return {{"gemm_peak_fraction", c.gemm_peak_fraction},
          {"attention_peak_fraction", c.attention_peak_fraction},
          {"memory_bandwidth_fraction", c.memory_bandwidth_fraction},
          {"nvlink_bandwidth_fraction", c.nvlink_bandwidth_fraction},
          {"network_bandwidth_fraction", c.network_bandwidth_fraction},
          {"alltoall_network_fraction", c.alltoall_network_fraction},
          {"kernel_overhead_s", c.kernel_overhead_s},
          {"gemm_wave_s", c.gemm_wave_s},
          {"gemm_kernel_s", c.gemm_kernel_s},
          {"host_dispatch_s", c.host_dispatch_s},
          {"collective_step_intra_s", c.collective_step_intra_s},
          {"collective_step_inter_s", c.collective_step_inter_s},
          {"allocator_reserve_fraction", c.allocator_reserve_fraction},
          {"provenance", c.provenance}};
}

std::string render_validation(const ValidationReport& report) {
  const ValidationResult& v = *report.result;
  std::string out;
  if (report.list_runs) out += runs_table(v) + "\n";
  const std::string unsupported = unsupported_list(v);
  if (!unsupported.empty()) out += unsupported + "\n";
  out += summary_table(v);
  out += "\n";
  out += pairs_table(v, report.list_runs);
  if (report.cross_validation != nullptr) {
    out += "\n";
    out += cross_validation_table(*report.cross_validation, v);
  }
  return out + "\nconstants: " + constants_json(report.constants).dump() + "\n";
}

nlohmann::ordered_json validation_json(const ValidationReport& report) {
  const nlohmann::ordered_json inputs = {{"runs_file", report.runs_files.front()}, {"runs_files", report.runs_files},
                                         {"groups", report.groups}, {"fit_constants", report.fit_constants},
                                         {"tolerance", report.tolerance}, {"constants", constants_json(report.constants)}};
  nlohmann::ordered_json doc = json_envelope("trainsim.validation", inputs);
  const ValidationResult& v = *report.result;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const RunResult& r : v.runs) list.push_back(run_json(r));
  doc["runs"] = list;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const ErrorSummary& g : v.groups) groups.push_back(summary_json(g));
  nlohmann::ordered_json summary = summary_json(v.all);
  summary.erase("name");
  summary["fit_half"] = summary_json(v.fit_half);
  summary["held_out_half"] = summary_json(v.held_out_half);
  summary["groups"] = groups;
  doc["summary"] = summary;
  nlohmann::ordered_json pairs;
  for (const PairKind kind : {PairKind::kGpu, PairKind::kPrecision}) {
    const std::vector<RunPair> found = same_plan_pairs(v, kind);
    const PairSummary sum = summarize_pairs(found);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const RunPair& p : found) {
      list.push_back({{"from", p.from->run->id}, {"to", p.to->run->id}, {"measured_ratio", p.measured_ratio},
                      {"predicted_ratio", p.predicted_ratio}, {"error", p.error()}});
    }
    const auto or_null = [&](double x) { return sum.count > 0 ? nlohmann::ordered_json(x) : nlohmann::ordered_json(); };
    pairs[to_string(kind)] = {{"count", sum.count}, {"mean_abs_error", or_null(sum.mean_abs_error)}, {"max_abs_error", or_null(sum.max_abs_error)},
                              {"within_ten_percent", sum.within_ten_percent}, {"pairs", list}};
  }
  doc["pairs"] = pairs;
  if (report.cross_validation != nullptr) {
    nlohmann::ordered_json cv = nlohmann::ordered_json::array();
    for (const CrossValidatedGroup& c : *report.cross_validation) {
      nlohmann::ordered_json entry = summary_json(c.held_out);
      entry["in_sample_mean_abs_error"] = c.in_sample.mean_abs_error;
      if (const ErrorSummary* shipped = shipped_group(v, c.held_out.name)) entry["shipped_mean_abs_error"] = shipped->mean_abs_error;
      if (c.in_sample.memory_count > 0) entry["in_sample_memory_mean_abs_error"] = c.in_sample.memory_mean_abs_error;
      entry["constants"] = constants_json(c.constants);
      cv.push_back(entry);
    }
    doc["cross_validation"] = cv;
  }
  return doc;
}

}  // namespace trainsim
