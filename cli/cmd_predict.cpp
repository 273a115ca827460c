// `trainsim predict --model M <hardware> <plan> [--from FORMAT FILE] [--trace FILE] [--format json]`:
// one iteration; with --train-tokens (or any goodput option) also goodput, effective days and $.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/goodput_options.hpp"
#include "cli/import_options.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "plan/framework_preset.hpp"
#include "reports/goodput_report.hpp"
#include "reports/json_output.hpp"
#include "reports/perfetto_trace.hpp"
#include "reports/prediction_report.hpp"
#include "sim/cost_model_choice.hpp"
#include "sim/simulator.hpp"

namespace trainsim {

Command add_predict_command(CLI::App& root) {
  struct Options {
    ModelOptions model;
    PlanOptions plan;
    ImportOptions from;
    HardwareOptions hardware;
    FormatOption format;
    GoodputOptions goodput;
    std::string trace_path;
    SavePlanOptions save_plan;
    bool fail_if_oom = false;
    std::string trace_ranks = "classes";
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("predict", "simulate one training iteration of one plan");
  o->model.add_to(*app);
  o->hardware.add_to(*app);
  o->plan.filled_pipeline_default = true;
  o->plan.add_to(*app);
  o->from.add_to(*app);
  o->format.add_to(*app);
  o->goodput.add_to(*app, true);
  app->add_option("--trace", o->trace_path, "write a Chrome/Perfetto trace of the iteration to this file");
  o->save_plan.add_to(*app, false);
  app->add_flag("--fail-if-oom", o->fail_if_oom,
                "exit with code " + std::to_string(kExitDoesNotFit) + " when the plan does not fit (default: 0, the answer is the output)");
  app->add_option("--trace-ranks", o->trace_ranks, "with --trace: 'classes' (one process per pipeline stage) or 'all' (every rank)")
      ->check(CLI::IsMember({"classes", "all"}));
  return {app, [o]() {
            ModelSpec model = o->model.resolve();
            const std::optional<ImportedJob> job = o->from.load(o->model, model, o->plan.given("gpus") ? o->plan.gpus : 0);
            std::string batch_default;
            const ParallelPlan plan = o->plan.resolve(model, job ? &*job : nullptr, &batch_default);
            const BatchEcho batch = make_batch_echo(model, plan, batch_default,
                                                    o->model.seq_len_source(model, job && job->seq_len > 0 ? job->file : ""));
            const Hardware hardware = o->hardware.resolve(plan);
            // The framework's attention kernel: --framework, else the imported file's framework.
            const std::string framework = o->plan.given("framework") ? o->plan.framework : job ? job->framework : "";
            const bool flash2 = !framework.empty() && framework_preset(framework).flash2_attention_on_hopper;
            const std::unique_ptr<CostModel> cost = o->hardware.costs().make(hardware, plan.precision, flash2);
            SimulationOptions options;
            options.keep_trace = !o->trace_path.empty();
            options.op_categories = true;
            Prediction prediction = predict_iteration(model, plan, hardware, *cost, options);
            prediction.extrapolated = extrapolated_ops(*cost);
            if (options.keep_trace) {
              std::ofstream out(o->trace_path);
              if (!out) throw InputError("--trace: cannot write " + o->trace_path, "check that the folder exists and is writable");
              try {
                write_perfetto_trace(out, prediction, PerfettoOptions{o->trace_ranks == "all"});
              } catch (const InputError&) {  // refused (too many ranks): no empty file left behind
                out.close();
                std::filesystem::remove(o->trace_path);
                throw;
              }
            }
            o->goodput.check();
            std::optional<GoodputStudy> goodput;
            if (prediction.fits && o->goodput.wanted(o->goodput.train_tokens, o->hardware.costs())) {
              const GoodputConfig config = o->goodput.resolve(o->goodput.train_tokens, o->hardware.costs());
              goodput = study_goodput(model, plan, hardware, prediction.iteration_time_s, config);
            }
            if (o->format.value() == OutputFormat::kJson) {
              nlohmann::ordered_json doc = prediction_json(prediction, &batch);
              if (goodput) doc["goodput"] = goodput_json(*goodput);
              write_json(std::cout, doc);
            } else {
              std::cout << render_prediction_table(prediction, &batch) << (goodput ? render_goodput_table(*goodput) : "");
              if (options.keep_trace) std::cout << "\ntrace written to " << o->trace_path << " (open in ui.perfetto.dev)\n";
            }
            o->save_plan.write({plan});
            return o->fail_if_oom && !prediction.fits ? kExitDoesNotFit : 0;
          }};
}

}  // namespace trainsim
