// `trainsim model --model M [plan options] [--format json]`: parameters, FLOPs and memory per GPU.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "reports/json_output.hpp"
#include "reports/model_report.hpp"

namespace trainsim {

Command add_model_command(CLI::App& root) {
  struct Options {
    ModelOptions model;
    PlanOptions plan;
    FormatOption format;
  };
  auto options = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("model", "parameter count, FLOPs per token and memory per GPU for a plan");
  options->model.add_to(*app);
  options->plan.add_to(*app);
  options->format.add_to(*app);
  return {app, [options]() {
            const ModelSpec model = options->model.resolve();
            const ParallelPlan plan = options->plan.resolve(model);
            const ModelReport report = build_model_report(model, plan);
            if (options->format.value() == OutputFormat::kJson) {
              write_json(std::cout, model_report_json(report));
            } else {
              std::cout << render_model_table(report);
            }
            return 0;
          }};
}

}  // namespace trainsim
