// Builds the command line (CLI11), runs the chosen subcommand, and is the only place that turns
// errors into messages and exit codes: 0 ok, 1 runtime/device failure, 2 bad usage or input,
// 3 compare/validate over tolerance, 4 the plan does not fit (model/predict --fail-if-oom).
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace trainsim {

int run_cli(int argc, char** argv);

// `model` / `predict --fail-if-oom` when the plan does not fit the GPU (a script can gate on it).
inline constexpr int kExitDoesNotFit = 4;

// A registered subcommand: its CLI11 node and what to run when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_catalog_command(CLI::App& root);
Command add_model_command(CLI::App& root);
Command add_predict_command(CLI::App& root);
Command add_validate_command(CLI::App& root);
Command add_search_command(CLI::App& root);
Command add_export_command(CLI::App& root);
Command add_calibrate_command(CLI::App& root);
Command add_run_command(CLI::App& root);
Command add_compare_command(CLI::App& root);
Command add_report_command(CLI::App& root);
Command add_trace_command(CLI::App& root);

}  // namespace trainsim
