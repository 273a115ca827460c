// `trainsim report`: a Markdown or HTML document with SVG charts from trainsim's JSON outputs. One
// section per input file, by its schema:
//   trainsim.prediction   headline figures, the iteration's breakdown (bar), memory per GPU
//                         against the GPU's capacity (bar), the breakdown table;
//   trainsim.measurement  headline figures, loss and iteration time per step (lines), breakdown;
//   trainsim.comparison   predicted vs measured per phase (bars) and the table of errors;
//   trainsim.search       the ranked plans (table), time against $ per million tokens (points,
//                         the Pareto front apart);
//   trainsim.validation   predicted against measured tokens/s per GPU per group (log-log points
//                         with the y = x line), errors per group and half (table);
//   trainsim.model        memory per GPU on each pipeline stage (bars and table);
//   trainsim.hardware_profile  GEMM TFLOP/s against 2mnk, memory-bound GB/s and collective bus
//                         bandwidth against bytes (log x), provenance.
// Other files (catalogs, published-run files) are refused with the schemas the report takes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim {

struct ReportChart {
  std::string caption;
  std::string svg;
};

struct ReportSection {
  std::string title;
  std::string source;                           // the input file
  std::vector<std::string> facts;               // one line each (a bullet list)
  std::vector<std::vector<std::string>> table;  // first row: the header; may be empty
  std::vector<ReportChart> charts;
};

// Throws InputError naming `source` (and the key) when `doc` is not an output the report takes.
ReportSection report_section(const nlohmann::json& doc, const std::string& source);

// Markdown: charts are referenced as `chart_files[s][c]` (written by the caller next to it).
std::string render_markdown(const std::string& title, const std::vector<ReportSection>& sections,
                            const std::vector<std::vector<std::string>>& chart_files);
// One self-contained HTML file (inline SVG, inline style).
std::string render_html(const std::string& title, const std::vector<ReportSection>& sections);

}  // namespace trainsim
