// `trainsim report INPUT... [--out FILE] [--title TEXT]`: a Markdown (`.md`, with the charts as
// SVG files beside it) or self-contained HTML (`.html`) report with charts from trainsim's JSON
// outputs (reports/report_document.hpp says which and what it draws).
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "reports/json_output.hpp"
#include "reports/report_document.hpp"

namespace trainsim {

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("--out: cannot write " + path.string(), "check that the folder exists and is writable");
  out << text;
  if (!out) throw InputError("--out: writing " + path.string() + " failed (disk full?)");
}

}  // namespace

Command add_report_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> inputs;
    std::string out = "report.html";
    std::string title = "trainsim report";
    FormatOption format;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("report", "Markdown/HTML report with charts from any of the JSON outputs");
  app->add_option("inputs", o->inputs,
                  "JSON written by trainsim: predict / search / validate / compare --format json, run --out")
      ->required();
  app->add_option("--out", o->out, "report file: .html (self-contained, default report.html) or .md (charts as .svg beside it)");
  app->add_option("--title", o->title, "the report's heading");
  o->format.add_to(*app);
  return {app, [o]() {
            const std::filesystem::path out(o->out);
            const std::string extension = out.extension().string();
            if (extension != ".md" && extension != ".html" && extension != ".htm") {
              throw InputError("--out " + o->out + ": the report is Markdown (.md) or HTML (.html)", "e.g. --out report.html");
            }
            std::vector<ReportSection> sections;
            for (const std::string& input : o->inputs) sections.push_back(report_section(load_json_file(input), input));
            std::vector<std::string> written;
            if (extension == ".md") {
              std::vector<std::vector<std::string>> chart_files(sections.size());
              for (size_t s = 0; s < sections.size(); ++s) {
                for (size_t c = 0; c < sections[s].charts.size(); ++c) {
                  const std::string name = out.stem().string() + "-" + std::to_string(s + 1) + "-" + std::to_string(c + 1) + ".svg";
                  write_file(out.parent_path() / name, sections[s].charts[c].svg);
                  written.push_back((out.parent_path() / name).string());
                  chart_files[s].push_back(name);
                }
              }
              write_file(out, render_markdown(o->title, sections, chart_files));
            } else {
              write_file(out, render_html(o->title, sections));
            }
            written.insert(written.begin(), o->out);
            size_t charts = 0;
            for (const ReportSection& s : sections) charts += s.charts.size();
            if (o->format.value() == OutputFormat::kJson) {
              nlohmann::ordered_json inputs;
              inputs["inputs"] = o->inputs;
              inputs["out"] = o->out;
              nlohmann::ordered_json doc = json_envelope("trainsim.report", inputs);
              doc["sections"] = sections.size();
              doc["charts"] = charts;
              doc["written"] = written;
              write_json(std::cout, doc);
            } else {
              std::cout << "report written to " << o->out << ": " << sections.size() << " section(s), " << charts << " chart(s)";
              if (written.size() > 1) std::cout << " (" << written.size() - 1 << " SVG file(s) beside it)";
              std::cout << "\n";
            }
            return 0;
          }};
}

}  // namespace trainsim
