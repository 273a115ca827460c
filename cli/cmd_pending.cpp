// Subcommands of the INTERFACE.md contract that are not built yet. They accept any arguments,
// say plainly that they are not built, and exit 2 — never printing made-up numbers.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace trainsim {

void add_pending_commands(CLI::App& root, std::vector<Command>& commands) {
  struct Pending {
    const char* name;
    const char* what;
    const char* issue;
  };
  static const Pending kPending[] = {
      {"report", "Markdown/HTML report with charts", "a later issue"},
  };
  for (const auto& pending : kPending) {
    CLI::App* app = root.add_subcommand(pending.name, std::string(pending.what) + " [not built yet]");
    app->allow_extras();
    commands.push_back({app, [pending]() {
                          std::cerr << "error: `trainsim " << pending.name << "` is not built yet; it arrives with "
                                    << pending.issue << "\nhint: `trainsim model` and `trainsim catalog` work today\n";
                          return 2;
                        }});
  }
}

}  // namespace trainsim
