// Predicted vs measured: errors per phase, differing inputs, and their table and JSON.
#include "reports/comparison.hpp"

#include <cmath>
#include <cstdio>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

namespace {

struct FigureRow {
  const char* label;
  const char* key;
  double IterationFigures::*field;  // iteration time and memory; else
  double PhaseBreakdown::*phase;    // a phase of the breakdown
  double of(const IterationFigures& f) const { return field != nullptr ? f.*field : f.phases.*phase; }
};

// The rows of a comparison, in the order of predict's breakdown.
constexpr FigureRow kRows[] = {
    {"iteration time", "iteration_time_s", &IterationFigures::iteration_time_s, nullptr},
    {"compute", "compute_s", nullptr, &PhaseBreakdown::compute_s},
    {"TP communication (exposed)", "tp_comm_exposed_s", nullptr, &PhaseBreakdown::tp_comm_exposed_s},
    {"DP communication (exposed)", "dp_comm_exposed_s", nullptr, &PhaseBreakdown::dp_comm_exposed_s},
    {"PP communication (exposed)", "pp_comm_exposed_s", nullptr, &PhaseBreakdown::pp_comm_exposed_s},
    {"pipeline bubble", "bubble_s", nullptr, &PhaseBreakdown::bubble_s},
    {"optimizer step", "optimizer_s", nullptr, &PhaseBreakdown::optimizer_s},
    {"memory peak per GPU", "memory_peak_gib", &IterationFigures::memory_peak_gib, nullptr},
};

// Seconds in the unit that keeps three significant figures readable (ASCII "us": tables align by bytes).
std::string format_seconds(double s) {
  char buffer[64];
  if (s == 0 || std::fabs(s) >= 1) {
    std::snprintf(buffer, sizeof buffer, "%.3f s", s);
  } else if (std::fabs(s) >= 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f us", s * 1e6);
  }
  return buffer;
}

std::string format_gib(double gib) {
  if (gib == 0 || gib >= 1) return format_fixed(gib, 2) + " GiB";
  return format_fixed(bytes_to_mib(gib_to_bytes(gib)), 1) + " MiB";
}

std::string format_value(const FigureComparison& f, double value) {
  return f.key == "memory_peak_gib" ? format_gib(value) : format_seconds(value);
}

std::string format_error(const std::optional<double>& error) {
  if (!error) return "n/a";
  std::string out = *error >= 0 ? "+" : "";  // appended: GCC 12 warns (-Wrestrict) on "+" + std::string
  return out.append(format_percent(*error));
}

std::string shown(const std::optional<std::string>& value) { return value ? *value : "absent"; }

nlohmann::ordered_json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json optional_json(const std::optional<std::string>& x) {
  return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
}

std::vector<OpStageComparison> compare_op_categories(const std::vector<OpCategoryTimes>& predicted,
                                                     const std::vector<OpCategoryTimes>& measured) {
  std::vector<OpStageComparison> out;
  for (size_t s = 0; s < std::min(predicted.size(), measured.size()); ++s) {
    OpStageComparison stage;
    stage.stage = static_cast<int64_t>(s);
    for (size_t c = 0; c < kOpCategoryCount; ++c) {
      OpCategoryComparison row;
      row.category = static_cast<OpCategory>(c);
      row.predicted_forward_s = predicted[s].forward_s[c];
      row.predicted_backward_s = predicted[s].backward_s[c];
      row.measured_forward_s = measured[s].forward_s[c];
      row.measured_backward_s = measured[s].backward_s[c];
      const double p = row.predicted_forward_s + row.predicted_backward_s, m = row.measured_forward_s + row.measured_backward_s;
      if (p == 0 && m == 0) continue;
      row.error = relative_error(p, m);
      stage.rows.push_back(row);
    }
    if (measured[s].total_s(OpCategory::kGemmOther) > 0) {
      OpCategoryComparison all;
      all.category = OpCategory::kGemmOther;
      for (const OpCategoryComparison& r : stage.rows) {
        if (!op_category_key(r.category).starts_with("gemm_")) continue;
        all.predicted_forward_s += r.predicted_forward_s;
        all.predicted_backward_s += r.predicted_backward_s;
        all.measured_forward_s += r.measured_forward_s;
        all.measured_backward_s += r.measured_backward_s;
      }
      all.error = relative_error(all.predicted_forward_s + all.predicted_backward_s, all.measured_forward_s + all.measured_backward_s);
      stage.gemm_all_roles = all;
    }
    out.push_back(std::move(stage));
  }
  return out;
}

std::string render_op_stage(const OpStageComparison& stage) {
  std::string out = "\n  per op category, pipeline stage " + std::to_string(stage.stage) + " (seconds per iteration):\n";
  TextTable t({{"", TextTable::Align::kLeft}, {"pred fwd"}, {"meas fwd"}, {"pred bwd"}, {"meas bwd"}, {"error"}});
  double pf = 0, mf = 0, pb = 0, mb = 0;
  for (const OpCategoryComparison& r : stage.rows) {
    t.add_row({std::string(op_category_key(r.category)), format_seconds(r.predicted_forward_s), format_seconds(r.measured_forward_s),
               format_seconds(r.predicted_backward_s), format_seconds(r.measured_backward_s), format_error(r.error)});
    pf += r.predicted_forward_s;
    mf += r.measured_forward_s;
    pb += r.predicted_backward_s;
    mb += r.measured_backward_s;
  }
  if (const std::optional<OpCategoryComparison>& g = stage.gemm_all_roles) {
    t.add_rule();
    t.add_row({"gemm, all roles", format_seconds(g->predicted_forward_s), format_seconds(g->measured_forward_s),
               format_seconds(g->predicted_backward_s), format_seconds(g->measured_backward_s), format_error(g->error)});
  }
  t.add_rule();
  t.add_row({"sum", format_seconds(pf), format_seconds(mf), format_seconds(pb), format_seconds(mb), format_error(relative_error(pf + pb, mf + mb))});
  return out + t.render();
}

}  // namespace

bool Comparison::over_tolerance() const {
  const std::optional<double>& error = iteration_time().error;
  return !error || std::fabs(*error) > tolerance;
}

std::optional<double> relative_error(double predicted, double measured) {
  if (measured == 0) return std::nullopt;
  return predicted / measured - 1.0;
}

std::vector<InputDifference> diff_identities(const RunIdentity& predicted, const RunIdentity& measured) {
  std::vector<InputDifference> out;
  auto p = predicted.begin();
  auto m = measured.begin();
  while (p != predicted.end() || m != measured.end()) {
    if (m == measured.end() || (p != predicted.end() && p->first < m->first)) {
      out.push_back({p->first, p->second, std::nullopt});
      ++p;
    } else if (p == predicted.end() || m->first < p->first) {
      out.push_back({m->first, std::nullopt, m->second});
      ++m;
    } else {
      if (p->second != m->second) out.push_back({p->first, p->second, m->second});
      ++p;
      ++m;
    }
  }
  return out;
}

Comparison compare_runs(const ComparedRun& predicted, const ComparedRun& measured, double tolerance) {
  Comparison c;
  c.tolerance = tolerance;
  for (const FigureRow& row : kRows) {
    const double p = row.of(predicted.figures);
    const double m = row.of(measured.figures);
    c.figures.push_back({row.label, row.key, p, m, relative_error(p, m)});
  }
  // Checkpoint save and load when both files have them (predict with goodput; run with checkpoints).
  if (predicted.checkpoint_save_s > 0 && measured.checkpoint_save_s > 0) {
    c.figures.push_back({"checkpoint save", "checkpoint_save_s", predicted.checkpoint_save_s, measured.checkpoint_save_s,
                         relative_error(predicted.checkpoint_save_s, measured.checkpoint_save_s)});
  }
  if (predicted.checkpoint_load_s > 0 && measured.checkpoint_load_s > 0) {
    c.figures.push_back({"checkpoint load", "checkpoint_load_s", predicted.checkpoint_load_s, measured.checkpoint_load_s,
                         relative_error(predicted.checkpoint_load_s, measured.checkpoint_load_s)});
  }
  c.op_stages = compare_op_categories(predicted.op_categories, measured.op_categories);
  if (measured.identity_stated) c.differences = diff_identities(predicted.identity, measured.identity);
  return c;
}

void require_same_inputs(const Comparison& c, const ComparedRun& predicted, const ComparedRun& measured) {
  if (c.differences.empty()) return;
  std::vector<std::string> problems;
  problems.push_back(predicted.path + " and " + measured.path + " describe different runs: " +
                     std::to_string(c.differences.size()) + " key(s) of inputs.model / inputs.plan differ");
  for (const InputDifference& d : c.differences) {
    problems.push_back(measured.path + ": " + d.key + ": " + shown(d.measured) + ", but the prediction has " +
                       shown(d.predicted));
  }
  throw InputError(problems,
                   "predict the same model and plan as the run (the run's inputs hold them), "
                   "or pass --allow-mismatch to compare anyway");
}

std::string render_comparison_table(const Comparison& c, const ComparedRun& predicted, const ComparedRun& measured) {
  std::string out = "compare: " + predicted.model_name + "\n  predicted: " + predicted.path + "\n";
  if (!predicted.note.empty()) out += "    " + predicted.note + "\n";
  out += "  measured:  " + measured.path + "\n";
  if (!measured.note.empty()) out += "    " + measured.note + "\n";
  for (const InputDifference& d : c.differences) {
    out += "  MISMATCH (--allow-mismatch): " + d.key + ": predicted " + shown(d.predicted) + ", measured " +
           shown(d.measured) + "\n";
  }
  out += "\n";
  TextTable t({{"", TextTable::Align::kLeft}, {"predicted"}, {"measured"}, {"error"}});
  for (const FigureComparison& f : c.figures) {
    if (f.key == "memory_peak_gib" || f.key == "checkpoint_save_s") t.add_rule();
    t.add_row({f.label, format_value(f, f.predicted), format_value(f, f.measured), format_error(f.error)});
  }
  out += t.render();
  for (const OpStageComparison& stage : c.op_stages) out += render_op_stage(stage);
  if (!c.op_stages.empty()) {
    if (c.op_stages.front().gemm_all_roles) {
      out += "  gemm_other: GEMMs the measurement could not place by role (a trace without shapes or model); \"gemm, all roles\" sums every GEMM row\n";
    }
    out += "  tp_comm: TP collectives holding the compute stream; other: measured compute time outside every timed op\n"
           "  (temporaries, copies, allocation and its page faults; in a profiler trace: kernels of no category), which predict does not price\n";
  }
  out += "\n  error = predicted / measured - 1 (n/a where nothing was measured); iteration time " +
         std::string(c.over_tolerance() ? "OVER" : "within") + " the tolerance of " + format_percent(c.tolerance) +
         "\n";
  return out;
}

nlohmann::ordered_json comparison_json(const Comparison& c, const ComparedRun& predicted, const ComparedRun& measured,
                                       bool allow_mismatch) {
  nlohmann::ordered_json inputs = {{"predicted_path", predicted.path},
                                   {"measured_path", measured.path},
                                   {"model_name", predicted.model_name},
                                   {"tolerance", c.tolerance},
                                   {"allow_mismatch", allow_mismatch}};
  nlohmann::ordered_json doc = json_envelope("trainsim.comparison", inputs);
  doc["iteration_time_error"] = optional_json(c.iteration_time().error);
  doc["within_tolerance"] = !c.over_tolerance();
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();
  for (const FigureComparison& f : c.figures) {
    figures[f.key] = {{"predicted", f.predicted}, {"measured", f.measured}, {"error", optional_json(f.error)}};
  }
  doc["figures"] = figures;
  nlohmann::ordered_json differences = nlohmann::ordered_json::array();
  for (const InputDifference& d : c.differences) {
    differences.push_back({{"key", d.key}, {"predicted", optional_json(d.predicted)}, {"measured", optional_json(d.measured)}});
  }
  doc["input_differences"] = differences;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const OpStageComparison& stage : c.op_stages) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::object();
    for (const OpCategoryComparison& r : stage.rows) {
      rows[std::string(op_category_key(r.category))] = {
          {"predicted_forward_s", r.predicted_forward_s}, {"measured_forward_s", r.measured_forward_s},
          {"predicted_backward_s", r.predicted_backward_s}, {"measured_backward_s", r.measured_backward_s},
          {"error", optional_json(r.error)}};
    }
    nlohmann::ordered_json entry = {{"stage", stage.stage}, {"categories", rows}};
    if (const std::optional<OpCategoryComparison>& g = stage.gemm_all_roles) {
      entry["gemm_all_roles"] = {{"predicted_forward_s", g->predicted_forward_s}, {"measured_forward_s", g->measured_forward_s},
                                 {"predicted_backward_s", g->predicted_backward_s}, {"measured_backward_s", g->measured_backward_s},
                                 {"error", optional_json(g->error)}};
    }
    stages.push_back(std::move(entry));
  }
  doc["op_categories"] = stages;
  doc["notes"] = {{"predicted", predicted.note}, {"measured", measured.note}};
  return doc;
}

}  // namespace trainsim
