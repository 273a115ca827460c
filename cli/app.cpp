// Top-level command line and error handling.
#include "cli/app.hpp"

#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/option_checks.hpp"
#include "common/errors.hpp"
#include "common/provenance.hpp"

namespace trainsim {

namespace {

// A damaged file can hold thousands of problems; the first ones say what is wrong.
constexpr size_t kProblemsShown = 20;

void print_input_error(const InputError& e) {
  const auto& problems = e.problems();
  for (size_t i = 0; i < problems.size() && i < kProblemsShown; ++i) std::cerr << "error: " << problems[i] << "\n";
  if (problems.size() > kProblemsShown) {
    std::cerr << "error: ... and " << problems.size() - kProblemsShown << " more problems (" << problems.size() << " in all)\n";
  }
  if (!e.hint().empty()) std::cerr << "hint: " << e.hint() << "\n";
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App root{"trainsim: predict, search, calibrate and run distributed-training plans"};
  root.name("trainsim");
  root.set_version_flag("--version", std::string(tool_version()) + " (" + git_revision() + ")");
  root.require_subcommand(1);
  std::vector<Command> commands;
  commands.push_back(add_catalog_command(root));
  commands.push_back(add_model_command(root));
  commands.push_back(add_predict_command(root));
  commands.push_back(add_validate_command(root));
  commands.push_back(add_search_command(root));
  commands.push_back(add_export_command(root));
  commands.push_back(add_calibrate_command(root));
  commands.push_back(add_run_command(root));
  commands.push_back(add_compare_command(root));
  commands.push_back(add_report_command(root));
  commands.push_back(add_trace_command(root));

  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return root.exit(e);  // --help, --version
    const CLI::App* command = nullptr;
    for (const auto& c : commands) {
      if (c.app->parsed()) command = c.app;
    }
    std::cerr << "error: " << parse_error_message(e, command) << "\n";
    return 2;
  }
  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) return command.run();
    }
    std::cerr << "error: no subcommand was chosen\nhint: run `trainsim --help`\n";
    return 2;
  } catch (const InputError& e) {
    print_input_error(e);
    return 2;
  } catch (const DeviceError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\nhint: this is a bug in trainsim; please report it with the command line\n";
    return 1;
  }
}

}  // namespace trainsim
