// `trainsim trace FILE... [--top N] [--format json]`: reads PyTorch profiler (Kineto) traces (one
// file per rank, .json or .json.gz) and summarizes each: per profiler step wall time, GPU busy time,
// kernels, communication and exposed communication; kernel time per category; GPU annotations.
// `--out measured.json` also writes the step as a trainsim.measurement for `compare`
// (interop/trace_measurement.hpp), stamped with the model and plan of `--inputs-from PREDICTION`.
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "interop/kineto_summary.hpp"
#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "interop/kineto_trace.hpp"
#include "interop/trace_measurement.hpp"
#include "reports/json_output.hpp"
#include "reports/measurement_json.hpp"
#include "reports/text_table.hpp"
#include "reports/trace_summary_report.hpp"

namespace trainsim {
namespace {

const char* const kInputsHint = "--inputs-from takes the JSON that `trainsim predict ... --format json` wrote for the plan the traced job ran";

// The model, plan and hardware of the traced run, from a prediction of it; the plan's groups decide
// which phase an exposed collective belongs to.
nlohmann::ordered_json inputs_from_prediction(const std::string& path, TracePlanGroups& groups) {
  const nlohmann::json doc = load_json_file(path);
  require_envelope(doc, path, "trainsim.prediction", kInputsHint);
  const nlohmann::json* inputs = doc.contains("inputs") && doc["inputs"].is_object() ? &doc["inputs"] : nullptr;
  for (const char* part : {"model", "plan"}) {
    if (inputs == nullptr || !inputs->contains(part) || !(*inputs)[part].is_object()) {
      throw InputError(path + ": /inputs/" + part + " is missing or not an object", kInputsHint);
    }
  }
  const nlohmann::json& plan = (*inputs)["plan"];
  groups.stated = true;
  for (auto [key, field] : {std::pair{"tp", &groups.tp}, {"cp", &groups.cp}, {"ep", &groups.ep}, {"dp", &groups.dp}, {"pp", &groups.pp}}) {
    if (!plan.contains(key) || !plan[key].is_number_integer() || plan[key].get<int64_t>() < 1) {
      throw InputError(path + ": /inputs/plan/" + key + " must be an integer >= 1" +
                           (plan.contains(key) ? " (got " + plan[key].dump() + ")" : " (missing)"),
                       kInputsHint);
    }
    *field = plan[key].get<int64_t>();
  }
  const nlohmann::json& model = (*inputs)["model"];
  auto width = [&](const char* key) { return model.contains(key) && model[key].is_number_integer() ? model[key].get<int64_t>() : 0; };
  TraceModelWidths& w = groups.model;
  w.hidden = width("hidden");
  w.heads = width("heads");
  w.kv_heads = model.contains("kv_heads") ? width("kv_heads") : w.heads;
  w.head_dim = width("head_dim");
  w.ffn_hidden = width("ffn_hidden");
  w.vocab = width("vocab");
  w.gated_ffn = model.contains("ffn_kind") && model["ffn_kind"] == "swiglu";
  w.stated = w.hidden > 0 && w.heads > 0 && w.ffn_hidden > 0;
  nlohmann::ordered_json out;
  out["model"] = nlohmann::ordered_json::parse((*inputs)["model"].dump());
  out["plan"] = nlohmann::ordered_json::parse(plan.dump());
  if (inputs->contains("hardware")) out["hardware"] = nlohmann::ordered_json::parse((*inputs)["hardware"].dump());
  out["inputs_from"] = path;
  return out;
}

void write_measurement(const std::vector<KinetoTrace>& traces, const std::string& out_path, const std::string& inputs_path) {
  TracePlanGroups groups;
  nlohmann::ordered_json inputs = inputs_path.empty() ? nlohmann::ordered_json::object() : inputs_from_prediction(inputs_path, groups);
  const TraceMeasurement tm = measurement_from_traces(traces, groups);
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const KinetoTrace& t : traces) files.push_back(t.file);
  inputs["trace_files"] = files;
  nlohmann::ordered_json doc = measurement_json(tm.measurement, inputs);
  nlohmann::ordered_json trace;
  trace["device"] = tm.device_name;
  trace["critical_rank"] = tm.critical_rank;
  trace["rank_median_step_s"] = tm.rank_median_s;
  trace["pass_evidence"] = {{"kernels_by_annotation", tm.passes.kernels_by_annotation},
                            {"kernels_by_thread", tm.passes.kernels_by_thread},
                            {"kernels_by_default", tm.passes.kernels_by_default}};
  trace["memory_reserved_peak_gib"] = tm.memory_reserved_peak_gib;
  trace["gemm_kernels"] = tm.gemm_kernels;
  trace["gemm_kernels_by_role"] = tm.gemm_kernels_by_role;
  trace["notes"] = tm.notes;
  doc["memory_note"] = "memory_peak_gib: the PyTorch caching allocator's peak of bytes allocated to tensors over the profiled "
                       "window ([memory] events, profile_memory=True; 0 when the trace has none), comparable with predict's "
                       "memory; trace.memory_reserved_peak_gib: its peak reserved from the device (nvidia-smi shows that plus "
                       "the CUDA context)";
  doc["trace"] = trace;
  std::ofstream out(out_path);
  if (!out) throw InputError("--out " + out_path + ": cannot open for writing", "name a file in a folder that exists and is writable");
  write_json(out, doc);
  if (!out) throw InputError("--out " + out_path + ": writing failed", "check the disk space and permissions");
  const Measurement& m = tm.measurement;
  const PhaseBreakdown& b = m.breakdown;
  std::cerr << "trace: measurement written to " << out_path << ": median step " << format_fixed(m.iteration_time_s * 1e3, 3)
            << " ms over " << m.iterations.size() << (m.iterations.size() == 1 ? " step" : " steps") << "; forward "
            << format_fixed(b.forward_s * 1e3, 3) << ", backward " << format_fixed(b.backward_s * 1e3, 3) << ", optimizer "
            << format_fixed(b.optimizer_s * 1e3, 3) << ", exposed TP/EP " << format_fixed(b.tp_comm_exposed_s * 1e3, 3) << ", DP "
            << format_fixed(b.dp_comm_exposed_s * 1e3, 3) << ", PP " << format_fixed(b.pp_comm_exposed_s * 1e3, 3)
            << ", waiting " << format_fixed(b.bubble_s * 1e3, 3) << " ms\n";
  for (const std::string& n : tm.notes) std::cerr << "  note: " << n << "\n";
  if (inputs_path.empty()) {
    std::cerr << "  note: no --inputs-from: the measurement does not say which model and plan ran; compare takes them to be "
                 "the prediction's\n";
  }
}

}  // namespace

Command add_trace_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> files;
    int top = 10;
    FormatOption format;
    std::string out;
    std::string inputs_from;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("trace", "summarize PyTorch profiler (Kineto) traces: steps, GPU busy, categories");
  app->add_option("files", o->files, "Kineto Chrome-trace JSON files (.json or .json.gz), one per rank")->required();
  app->add_option("--top", o->top, "how many kernel names of category other to list (default 10)")
      ->check(CLI::Range(0, 100000));
  app->add_option("--out", o->out, "also write the steps as a trainsim.measurement JSON, for compare --measured");
  app->add_option("--inputs-from", o->inputs_from,
                  "with --out: the trainsim.prediction (predict --format json) of the plan the traced job ran: its model and "
                  "plan are stamped on the measurement and say which group each collective belongs to");
  o->format.add_to(*app);
  return {app, [o]() {
            if (!o->inputs_from.empty() && o->out.empty()) {
              throw InputError("--inputs-from " + o->inputs_from + " is given without --out", "--inputs-from stamps the measurement --out writes; add --out measured.json");
            }
            std::vector<KinetoTrace> traces;
            std::vector<TraceSummary> summaries;
            for (const std::string& f : o->files) {
              traces.push_back(read_kineto_trace(f, !o->out.empty()));  // CPU ops (shapes): only --out's GEMM roles need them
              summaries.push_back(summarize_trace(traces.back()));
            }
            if (!o->out.empty()) write_measurement(traces, o->out, o->inputs_from);
            std::vector<TraceMeasurement> passes;  // each file alone, its plan unstated
            for (const KinetoTrace& t : traces) passes.push_back(measurement_from_trace(t, TracePlanGroups{}));
            if (o->format.value() == OutputFormat::kJson) {
              write_json(std::cout, trace_summary_json(summaries, passes, o->top));
            } else {
              for (std::size_t i = 0; i < summaries.size(); ++i) {
                std::cout << (i ? "\n" : "") << render_trace_summary(summaries[i], passes[i], o->top);
              }
            }
            return 0;
          }};
}

}  // namespace trainsim
