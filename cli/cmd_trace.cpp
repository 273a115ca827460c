// `trainsim trace FILE... [--top N] [--format json]`: reads PyTorch profiler (Kineto) traces (one
// file per rank, .json or .json.gz) and summarizes each: per profiler step wall time, GPU busy time,
// kernels, communication and exposed communication; kernel time per category; GPU annotations.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "interop/kineto_summary.hpp"
#include "interop/kineto_trace.hpp"
#include "reports/json_output.hpp"
#include "reports/trace_summary_report.hpp"

namespace trainsim {

Command add_trace_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> files;
    int top = 10;
    FormatOption format;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("trace", "summarize PyTorch profiler (Kineto) traces: steps, GPU busy, categories");
  app->add_option("files", o->files, "Kineto Chrome-trace JSON files (.json or .json.gz), one per rank")->required();
  app->add_option("--top", o->top, "how many kernel names of category other to list (default 10)")
      ->check(CLI::Range(0, 100000));
  o->format.add_to(*app);
  return {app, [o]() {
            std::vector<TraceSummary> summaries;
            for (const std::string& f : o->files) summaries.push_back(summarize_trace(read_kineto_trace(f)));
            if (o->format.value() == OutputFormat::kJson) {
              write_json(std::cout, trace_summary_json(summaries, o->top));
            } else {
              for (std::size_t i = 0; i < summaries.size(); ++i) {
                std::cout << (i ? "\n" : "") << render_trace_summary(summaries[i], o->top);
              }
            }
            return 0;
          }};
}

}  // namespace trainsim
