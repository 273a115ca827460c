#include "reports/trace_summary_report.hpp"

#include <algorithm>
#include <sstream>

#include "reports/json_output.hpp"
#include "reports/text_table.hpp"

namespace trainsim {
namespace {

std::string ms(double us) { return format_fixed(us / 1000.0, 3); }
double sec(double us) { return us * 1e-6; }

std::string steps_table(const TraceSummary& s) {
  TextTable t({{"step", TextTable::Align::kLeft}, {"wall ms"}, {"CPU ms"}, {"GPU busy ms"}, {"kernels"}, {"comm ms"},
               {"exposed comm ms"}});
  for (const StepFigures& st : s.steps) {
    t.add_row({st.name, ms(st.wall_us), ms(st.cpu_us), ms(st.k.busy_us), format_count(st.k.kernels), ms(st.k.comm_us),
               ms(st.k.exposed_comm_us)});
  }
  t.add_rule();
  t.add_row({"whole trace (kernels)", ms(s.span_us), "", ms(s.all.busy_us), format_count(s.all.kernels), ms(s.all.comm_us),
             ms(s.all.exposed_comm_us)});
  return t.render();
}

std::string categories_table(const TraceSummary& s) {
  std::vector<std::pair<std::string, CategoryFigures>> rows(s.categories.begin(), s.categories.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.time_us > b.second.time_us; });
  double total = 0;
  for (const auto& r : rows) total += r.second.time_us;
  TextTable t({{"category", TextTable::Align::kLeft}, {"time ms"}, {"share"}, {"kernels"}});
  for (const auto& [name, f] : rows) {
    const std::string count = f.memory_ops > 0 ? format_count(f.memory_ops) + " " + name + "s" : format_count(f.kernels);
    t.add_row({name, ms(f.time_us), format_percent(total > 0 ? f.time_us / total : 0), count});
  }
  return t.render();
}

std::string other_table(const TraceSummary& s, int top) {
  TextTable t({{"kernel (category other)", TextTable::Align::kLeft}, {"time ms"}, {"kernels"}});
  const int n = std::min<int>(top, static_cast<int>(s.other_kernels.size()));
  for (int i = 0; i < n; ++i) {
    const auto& [name, f] = s.other_kernels[i];
    t.add_row({name.size() > 90 ? name.substr(0, 87) + "..." : name, ms(f.time_us), format_count(f.kernels)});
  }
  return t.render();
}

// The median step by phase and the op categories by pass, as `trace --out` measures them.
std::string passes_table(const TraceMeasurement& m) {
  const Measurement& me = m.measurement;
  const PhaseBreakdown& b = me.breakdown;
  std::ostringstream o;
  o << "median step by phase (as trace --out measures it; over all steps " << m.passes.kernels_by_annotation << " kernels placed by annotation, "
    << m.passes.kernels_by_thread << " by launching thread, " << m.passes.kernels_by_default << " by neither: forward)\n";
  TextTable p({{"phase", TextTable::Align::kLeft}, {"ms"}, {"share"}});
  const double total = me.iteration_time_s;
  for (const auto& [label, v] : std::vector<std::pair<const char*, double>>{{"forward", b.forward_s},
                                                                            {"backward", b.backward_s},
                                                                            {"optimizer", b.optimizer_s},
                                                                            {"exposed TP / CP / EP communication", b.tp_comm_exposed_s},
                                                                            {"exposed DP communication", b.dp_comm_exposed_s},
                                                                            {"exposed PP communication", b.pp_comm_exposed_s},
                                                                            {"waiting (nothing on the GPU)", b.bubble_s}}) {
    p.add_row({label, format_fixed(v * 1e3, 3), format_percent(total > 0 ? v / total : 0)});
  }
  p.add_rule();
  p.add_row({"step", format_fixed(total * 1e3, 3), ""});
  o << p.render();
  if (me.op_categories.empty()) return o.str();
  const OpCategoryTimes& ops = me.op_categories.front();
  o << "\nkernel time by trainsim op category and pass (median step; over all steps " << m.gemm_kernels_by_role << " of " << m.gemm_kernels
    << " GEMMs placed by role)\n";
  TextTable t({{"op category", TextTable::Align::kLeft}, {"forward ms"}, {"backward ms"}});
  for (size_t c = 0; c < kOpCategoryCount; ++c) {
    if (ops.forward_s[c] == 0 && ops.backward_s[c] == 0) continue;
    t.add_row({std::string(kOpCategoryKeys[c]), format_fixed(ops.forward_s[c] * 1e3, 3), format_fixed(ops.backward_s[c] * 1e3, 3)});
  }
  return o.str() + t.render();
}

std::string annotations_table(const std::map<std::string, AnnotationFigures>& a, const std::string& title) {
  TextTable t({{title, TextTable::Align::kLeft}, {"time ms (sum)"}, {"count"}});
  for (const auto& [name, f] : a) t.add_row({name, ms(f.time_us), format_count(f.count)});
  return t.render();
}

}  // namespace

std::string render_trace_summary(const TraceSummary& s, const TraceMeasurement& passes, int top_other) {
  std::ostringstream o;
  o << s.file << ": " << (s.device_name.empty() ? "device not named in the trace" : s.device_name) << ", "
    << format_count(s.all.kernels) << " kernels, " << s.steps.size() << " profiler step(s)\n"
    << "GPU busy = union of kernel, memcpy and memset intervals over all streams; comm = NCCL (RCCL) / DeepEP kernels; "
       "exposed comm = comm no compute kernel overlaps\n\n"
    << steps_table(s) << "\nkernel time by category (sum of durations; memcpy and memset are not kernels)\n"
    << categories_table(s);
  if (!s.other_kernels.empty()) {
    o << "\n" << s.other_kernels.size() << " kernel name(s) in category other; top " << std::min<std::size_t>(top_other, s.other_kernels.size())
      << " by time\n" << other_table(s, top_other);
  }
  o << "\n" << passes_table(passes);
  if (!s.annotations.empty()) o << "\n" << annotations_table(s.annotations, "GPU annotation");
  if (!s.cpu_annotations.empty()) o << "\n" << annotations_table(s.cpu_annotations, "CPU annotation (record_function)");
  return o.str();
}

namespace {

nlohmann::ordered_json one_trace_json(const TraceSummary& s, const TraceMeasurement& m, int top_other) {
  auto figures = [](const KernelSetFigures& k) {
    return nlohmann::ordered_json{{"kernels", k.kernels}, {"gpu_busy_s", sec(k.busy_us)}, {"comm_s", sec(k.comm_us)},
                                  {"exposed_comm_s", sec(k.exposed_comm_us)}};
  };
  nlohmann::ordered_json j{{"file", s.file},
                           {"device", {{"name", s.device_name}}},
                           {"kernels_total", s.all.kernels},
                           {"gpu_busy_s", sec(s.all.busy_us)},
                           {"kernel_span_s", sec(s.span_us)},
                           {"comm_s", sec(s.all.comm_us)},
                           {"exposed_comm_s", sec(s.all.exposed_comm_us)}};
  j["steps"] = nlohmann::ordered_json::array();
  for (const StepFigures& st : s.steps) {
    nlohmann::ordered_json e{{"name", st.name}, {"wall_s", sec(st.wall_us)}, {"cpu_s", sec(st.cpu_us)}};
    e.update(figures(st.k));
    j["steps"].push_back(e);
  }
  j["categories"] = nlohmann::ordered_json::object();
  for (const auto& [name, f] : s.categories) {
    j["categories"][name] = {{"time_s", sec(f.time_us)}, {"kernels", f.kernels}};
    if (f.memory_ops > 0) j["categories"][name]["memory_ops"] = f.memory_ops;
  }
  j["other_kernels"] = nlohmann::ordered_json::array();
  const int n = std::min<int>(top_other, static_cast<int>(s.other_kernels.size()));
  for (int i = 0; i < n; ++i) {
    const auto& [name, f] = s.other_kernels[i];
    j["other_kernels"].push_back({{"name", name}, {"time_s", sec(f.time_us)}, {"kernels", f.kernels}});
  }
  j["annotations"] = nlohmann::ordered_json::object();
  for (const auto& [name, f] : s.annotations) j["annotations"][name] = {{"time_s", sec(f.time_us)}, {"count", f.count}};
  j["cpu_annotations"] = nlohmann::ordered_json::object();
  for (const auto& [name, f] : s.cpu_annotations) j["cpu_annotations"][name] = {{"time_s", sec(f.time_us)}, {"count", f.count}};
  // The file as trace --out measures it: the median step by phase and the op categories by pass.
  const Measurement& me = m.measurement;
  const PhaseBreakdown& b = me.breakdown;
  nlohmann::ordered_json passes{{"median_step_s", me.iteration_time_s},
                                {"forward_s", b.forward_s},
                                {"backward_s", b.backward_s},
                                {"optimizer_s", b.optimizer_s},
                                {"tp_comm_exposed_s", b.tp_comm_exposed_s},
                                {"dp_comm_exposed_s", b.dp_comm_exposed_s},
                                {"pp_comm_exposed_s", b.pp_comm_exposed_s},
                                {"waiting_s", b.bubble_s},
                                {"kernels_by_annotation", m.passes.kernels_by_annotation},
                                {"kernels_by_thread", m.passes.kernels_by_thread},
                                {"kernels_by_default", m.passes.kernels_by_default}};
  passes["op_categories"] = nlohmann::ordered_json::object();
  if (!me.op_categories.empty()) {
    const OpCategoryTimes& ops = me.op_categories.front();
    for (size_t c = 0; c < kOpCategoryCount; ++c) {
      if (ops.forward_s[c] == 0 && ops.backward_s[c] == 0) continue;
      passes["op_categories"][std::string(kOpCategoryKeys[c])] = {{"forward_s", ops.forward_s[c]}, {"backward_s", ops.backward_s[c]}};
    }
  }
  j["passes"] = passes;
  return j;
}

}  // namespace

nlohmann::ordered_json trace_summary_json(const std::vector<TraceSummary>& traces, const std::vector<TraceMeasurement>& passes,
                                          int top_other) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const TraceSummary& s : traces) files.push_back(s.file);
  nlohmann::ordered_json doc = json_envelope("trainsim.trace_summary", {{"files", files}, {"top_other", top_other}});
  doc["traces"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < traces.size(); ++i) doc["traces"].push_back(one_trace_json(traces[i], passes[i], top_other));
  return doc;
}

}  // namespace trainsim
