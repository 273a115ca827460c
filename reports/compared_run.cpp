// Reading the two sides of `trainsim compare` from their files (the loader edge: after this,
// compare works on IterationFigures and RunIdentity only).
#include "reports/compared_run.hpp"

#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"
#include "reports/json_output.hpp"
#include "reports/measurement_json.hpp"
#include "reports/op_category_json.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

namespace {

const char* const kPredictionSchema = "trainsim.prediction";  // reports/prediction_report.cpp writes it
const char* const kPredictionHint = "--predicted takes the JSON that `trainsim predict ... --format json` writes";
const char* const kMeasurementHint = "--measured takes the JSON that `trainsim run ... --out FILE` writes";

void flatten(const nlohmann::json& value, const std::string& pointer, RunIdentity& identity) {
  if (!value.is_object()) {
    identity[pointer] = value.dump();
    return;
  }
  for (const auto& [key, item] : value.items()) {
    if (pointer == "/inputs/model" && key == "source") continue;  // a description, not the model
    flatten(item, pointer + "/" + key, identity);
  }
}

// inputs.model and inputs.plan must be objects; they are flattened into the identity.
RunIdentity read_identity(const nlohmann::json& doc, JsonObjectReader& root, std::string* model_name) {
  RunIdentity identity;
  JsonObjectReader inputs = root.required_object("inputs");
  for (const std::string part : {"model", "plan"}) {
    JsonObjectReader block = inputs.required_object(part);
    if (!block.ok()) continue;
    if (part == "model") *model_name = block.required_string("name");
    flatten(doc.at("inputs").at(part), "/inputs/" + part, identity);
  }
  return identity;
}

IterationFigures read_prediction_figures(JsonObjectReader& root) {
  IterationFigures f;
  f.iteration_time_s = root.required_number("iteration_time_s", 0);
  f.memory_peak_gib = root.required_number("memory_peak_gib", 0);
  JsonObjectReader b = root.required_object("breakdown");
  f.phases.compute_s = b.required_number("compute_s", 0);
  f.phases.tp_comm_exposed_s = b.required_number("tp_comm_exposed_s", 0);
  f.phases.dp_comm_exposed_s = b.required_number("dp_comm_exposed_s", 0);
  f.phases.pp_comm_exposed_s = b.required_number("pp_comm_exposed_s", 0);
  f.phases.bubble_s = b.required_number("bubble_s", 0);
  f.phases.optimizer_s = b.required_number("optimizer_s", 0);
  return f;
}

}  // namespace

IterationFigures measured_figures(const Measurement& m) {
  IterationFigures f;
  f.iteration_time_s = m.iteration_time_s;
  f.phases = m.breakdown;
  f.memory_peak_gib = m.memory_peak_gib;
  return f;
}

ComparedRun load_predicted_run(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  require_envelope(doc, path, kPredictionSchema, kPredictionHint);
  ProblemList problems;
  JsonObjectReader root(doc, path, "", problems);
  ComparedRun run;
  run.path = path;
  run.figures = read_prediction_figures(root);
  run.identity = read_identity(doc, root, &run.model_name);
  run.op_categories = read_op_categories(root);
  if (std::optional<JsonObjectReader> goodput = root.optional_object("goodput")) {
    if (std::optional<JsonObjectReader> c = goodput->optional_object("checkpoint")) {
      run.checkpoint_save_s = c->required_number("save_s", 0);
      run.checkpoint_load_s = c->required_number("load_s", 0);
    }
  }
  if (root.optional_bool("fits") == false) {
    run.note = "the prediction says this plan does not fit: " + root.optional_string("infeasible_reason").value_or("?");
  }
  problems.throw_if_any(kPredictionHint);
  return run;
}

ComparedRun load_measured_run(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  require_envelope(doc, path, kMeasurementSchema, kMeasurementHint);
  ProblemList problems;
  const Measurement m = read_measurement(doc, path, problems);
  JsonObjectReader root(doc, path, "", problems);
  ComparedRun run;
  run.path = path;
  run.figures = measured_figures(m);
  // A profiler trace does not say which model and plan ran: `trace --out` stamps them only with
  // --inputs-from; without, the identity is left unstated and compare takes the prediction's.
  const bool stated = m.backend != "trace" || (doc.contains("inputs") && doc["inputs"].is_object() && doc["inputs"].contains("model"));
  if (stated) {
    run.identity = read_identity(doc, root, &run.model_name);
  } else {
    run.identity_stated = false;
    root.optional_object("inputs");
  }
  const int64_t timed = static_cast<int64_t>(m.iterations.size()) - m.warmup_iterations;
  run.op_categories = m.op_categories;
  run.checkpoint_save_s = m.checkpoint_save_s;
  run.checkpoint_load_s = m.checkpoint_load_s;
  run.note = std::to_string(timed > 0 ? timed : 0) + " timed iterations after " + std::to_string(m.warmup_iterations) +
             " warm-up, " + std::to_string(m.ranks) + (m.ranks == 1 ? " rank" : " ranks") + ", " + m.backend + " backend";
  if (m.backend == "trace") {
    std::string device;
    if (doc.contains("trace") && doc["trace"].is_object() && doc["trace"].contains("device") && doc["trace"]["device"].is_string()) {
      device = doc["trace"]["device"].get<std::string>();
    }
    run.note = "profiler trace" + (device.empty() ? std::string() : " of " + device) + ", " + std::to_string(m.iterations.size()) +
               (m.iterations.size() == 1 ? " step" : " steps") + ", " + std::to_string(m.ranks) + (m.ranks == 1 ? " rank" : " ranks") +
               (stated ? "" : "; the trace does not say which model and plan ran (trace --out --inputs-from PREDICTION states "
                              "them): compared as the prediction's");
  } else if (!m.op_categories.empty()) {
    run.note += "; rank 0 per iteration: " + std::to_string(static_cast<int64_t>(m.page_faults_per_iteration)) +
                " page faults, " + format_fixed(m.system_s_per_iteration * 1e3, 1) + " ms in the kernel";
  }
  problems.throw_if_any(kMeasurementHint);
  return run;
}

}  // namespace trainsim
