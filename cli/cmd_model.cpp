// `trainsim model --model M [plan options] [--gpu G | --cluster C] [--fail-if-oom] [--format json]`:
// parameters, FLOPs and memory per GPU; with a GPU, also whether the plan fits it.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "reports/json_output.hpp"
#include "reports/model_report.hpp"
#include "sim/cost_model.hpp"

namespace trainsim {

Command add_model_command(CLI::App& root) {
  struct Options {
    ModelOptions model;
    PlanOptions plan;
    HardwareOptions hardware;
    FormatOption format;
    bool fail_if_oom = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("model", "parameter count, FLOPs per token and memory per GPU for a plan");
  options->model.add_to(*app);
  options->plan.filled_pipeline_default = true;
  options->plan.add_to(*app);
  options->hardware.add_to(*app);
  options->format.add_to(*app);
  app->add_flag("--fail-if-oom", options->fail_if_oom,
                "exit with code " + std::to_string(kExitDoesNotFit) + " when the plan does not fit the --gpu (default: 0, the answer is the output)");
  return {app, [options]() {
            const ModelSpec model = options->model.resolve();
            std::string batch_default;
            const ParallelPlan plan = options->plan.resolve(model, nullptr, &batch_default);
            ModelReport report = build_model_report(model, plan, make_batch_echo(model, plan, batch_default, options->model.seq_len_source(model)));
            const bool on_hardware = options->hardware.given("gpu") || options->hardware.given("cluster");
            if (options->fail_if_oom && !on_hardware) {
              throw InputError("--fail-if-oom needs --gpu or --cluster: without a GPU there is nothing to fit", "e.g. --gpu h100-sxm-80gb");
            }
            if (on_hardware) {
              const Hardware hardware = options->hardware.resolve(plan);
              add_device_fit(report, hardware, options->hardware.costs().make(hardware, plan.precision, false)->allocator_reserve_fraction());
            }
            if (options->format.value() == OutputFormat::kJson) {
              write_json(std::cout, model_report_json(report));
            } else {
              std::cout << render_model_table(report);
            }
            return options->fail_if_oom && report.fit && !report.fit->fits ? kExitDoesNotFit : 0;
          }};
}

}  // namespace trainsim
