// Reading published-run files, with the defaults of docs/validation.md for what sources omit.
#include "sim/published_runs.hpp"

#include <algorithm>

#include "common/json_reader.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

namespace {

// Sources whose software predates FlashAttention (2022) and Megatron-core's overlapped gradient
// reduction: Megatron-LM 2021 (SC'21), Korthikanti et al. 2022, BLOOM's Megatron-DeepSpeed.
bool predates_fused_attention(const std::string& group) {
  return group == "megatron_sc21_table1" || group == "korthikanti_2022_table5" || group == "bloom";
}

PublishedRun read_run(JsonObjectReader& r) {
  PublishedRun run;
  run.id = r.required_string("id");
  run.group = r.required_string("group");
  run.source = r.optional_string("source").value_or("");
  if (auto m = r.optional_object("model")) run.model = read_model(*m);
  else r.add_problem("model", "missing required object \"model\"");
  if (auto hw = r.optional_object("hardware")) {
    run.gpu = hw->required_string("gpu");
    run.gpus = hw->required_int("gpus", 1);
    run.gpus_per_node = hw->optional_int("gpus_per_node", 1).value_or(8);
    if (auto g = hw->optional_number("inter_node_gbps_per_gpu", 0.0)) run.inter_node_gbps_per_gpu = *g;
    else run.defaults_used.push_back("hardware.inter_node_gbps_per_gpu=200");
    hw->reject_unknown_keys();
  } else {
    r.add_problem("hardware", "missing required object \"hardware\"");
  }
  ParallelPlan defaults;
  // NeMo's GPT-3 training configs use the distributed optimizer (distributed_fused_adam): ZeRO-1.
  if (run.group == "nemo_launcher_a100") defaults.zero_stage = 1;
  const bool old = predates_fused_attention(run.group);
  defaults.attention = old ? AttentionKernel::kUnfused : AttentionKernel::kFlash;
  defaults.dp_overlap = !old;
  // Megatron-LM's asynchronous TP all-reduce arrived after the SC'21 runs and BLOOM's fork.
  defaults.tp_overlap = run.group != "megatron_sc21_table1" && run.group != "bloom";
  if (auto p = r.optional_object("plan")) {
    std::vector<std::string> defaulted;
    run.plan = read_plan(*p, defaults, &defaulted);
    p->reject_unknown_keys();
    for (const auto& key : defaulted) {
      if (key == "micro_batch") run.defaults_used.push_back("plan.micro_batch=1");
      else if (key == "zero_stage") run.defaults_used.push_back("plan.zero_stage=" + std::to_string(defaults.zero_stage));
      else if (key == "vpp") run.defaults_used.push_back("plan.vpp=1");
    }
  } else {
    r.add_problem("plan", "missing required object \"plan\"");
  }
  run.defaults_used.push_back(std::string("plan.attention=") + to_string(run.plan.attention));
  run.defaults_used.push_back(std::string("plan.dp_overlap=") + (run.plan.dp_overlap ? "true" : "false"));
  run.defaults_used.push_back(std::string("plan.tp_overlap=") + (run.plan.tp_overlap ? "true" : "false"));
  if (auto precision = r.optional_choice("precision", {"bf16", "fp16", "fp32", "fp8"})) {
    run.plan.precision = parse_precision(*precision);
  }
  if (auto m = r.optional_object("measured")) {
    run.measured_tokens_per_s_per_gpu = m->optional_number("tokens_per_s_per_gpu", 0.0).value_or(0.0);
    if (run.measured_tokens_per_s_per_gpu <= 0) m->add_problem("tokens_per_s_per_gpu", "must be given and > 0");
    run.measured_iteration_s = m->optional_number("iteration_s", 0.0);
    run.measured_model_tflops_per_gpu = m->optional_number("model_tflops_per_gpu", 0.0);
    run.measured_memory_gib = m->optional_number("memory_gib", 0.0);
    run.measured_oom = m->optional_bool("oom").value_or(false);
    m->reject_unknown_keys();
  } else {
    r.add_problem("measured", "missing required object \"measured\"");
  }
  r.reject_unknown_keys();
  return run;
}

}  // namespace

std::vector<PublishedRun> load_published_runs(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  ProblemList problems;
  JsonObjectReader root(doc, path, "", problems);
  root.required_choice("schema", {"trainsim.published_runs"});
  root.required_int("schema_version", 1);
  std::vector<PublishedRun> runs;
  if (doc.is_object() && doc.contains("runs") && doc["runs"].is_array()) {
    root.accept("runs");
    for (size_t i = 0; i < doc["runs"].size(); ++i) {
      JsonObjectReader entry(doc["runs"][i], path, "/runs/" + std::to_string(i), problems);
      runs.push_back(read_run(entry));
      const PublishedRun& run = runs.back();
      if (problems.empty()) {
        problems.add_all(validate_model(run.model, path + " /runs/" + std::to_string(i) + "/model"));
        problems.add_all(validate_plan(run.plan, run.model, path + " /runs/" + std::to_string(i) + "/plan"));
        if (run.plan.gpus() != run.gpus) {
          problems.add(path + ": /runs/" + std::to_string(i) + "/plan: dp x tp x pp x cp (" + std::to_string(run.plan.gpus()) +
                       ") must equal hardware.gpus (" + std::to_string(run.gpus) + ")");
        }
      }
    }
  } else {
    root.add_problem("runs", "missing required array \"runs\"");
  }
  root.reject_unknown_keys();
  problems.throw_if_any("shared/validation/README.md and INTERFACE.md describe the published-run format");
  return runs;
}

}  // namespace trainsim
