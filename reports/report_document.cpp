// Report sections from trainsim's JSON outputs (dispatch by schema), and their Markdown and HTML;
// see report_document.hpp.
#include "reports/report_document.hpp"

#include <sstream>

#include "common/errors.hpp"
#include "reports/json_output.hpp"
#include "reports/report_sections.hpp"
#include "reports/svg_chart.hpp"

namespace trainsim {

namespace {

using nlohmann::json;
using namespace report_detail;

const char* const kSchemas =
    "trainsim.prediction, trainsim.measurement, trainsim.comparison, trainsim.search, trainsim.validation, trainsim.model, "
    "trainsim.hardware_profile";

// Reads figures from one input file; a missing or mistyped key is an InputError naming both.
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

ReportSection report_section(const json& doc, const std::string& source) {
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string()) {
    throw InputError(source + ": not a trainsim JSON output (no \"schema\" key)", std::string("the report takes ") + kSchemas);
  }
  const std::string schema = doc["schema"].get<std::string>();
  const Reader r(doc, source);
  ReportSection s;
  // A file of another schema_version may mean other keys: refused rather than half read.
  if (const auto version = doc.find("schema_version"); version != doc.end() && *version != kSchemaVersion) {
    throw InputError(source + ": /schema_version: expected " + std::to_string(kSchemaVersion) + ", got " + version->dump() +
                         " (this trainsim reads schema_version " + std::to_string(kSchemaVersion) + ")",
                     "write it again with this trainsim (the command that made it), or report it with the trainsim that wrote it");
  }
  if (schema == "trainsim.prediction") {
    s = prediction_section(r, doc);
  } else if (schema == "trainsim.measurement") {
    s = measurement_section(r);
  } else if (schema == "trainsim.comparison") {
    s = comparison_section(r);
  } else if (schema == "trainsim.search") {
    s = search_section(r);
  } else if (schema == "trainsim.validation") {
    s = validation_section(r);
  } else if (schema == "trainsim.model") {
    s = model_section(r);
  } else if (schema == "trainsim.hardware_profile") {
    s = profile_section(r);
  } else {
    throw InputError(source + ": schema \"" + schema + "\" is not charted by the report",
                     std::string("the report takes ") + kSchemas);
  }
  s.source = source;
  return s;
}

std::string render_markdown(const std::string& title, const std::vector<ReportSection>& sections,
                            const std::vector<std::vector<std::string>>& chart_files) {
  std::ostringstream out;
  out << "# " << title << "\n\n";
  for (size_t i = 0; i < sections.size(); ++i) {
    const ReportSection& s = sections[i];
    out << "## " << s.title << "\n\n_from " << s.source << "_\n\n";
    for (const std::string& fact : s.facts) out << "- " << fact << "\n";
    out << "\n";
    for (size_t c = 0; c < s.charts.size() && i < chart_files.size() && c < chart_files[i].size(); ++c) {
      out << "![" << s.charts[c].caption << "](" << chart_files[i][c] << ")\n\n";
    }
    for (size_t row = 0; row < s.table.size(); ++row) {
      out << "|";
      for (const std::string& cell : s.table[row]) out << " " << markdown_cell(cell) << " |";
      out << "\n";
      if (row == 0) {
        out << "|";
        for (size_t k = 0; k < s.table[row].size(); ++k) out << "---|";
        out << "\n";
      }
    }
    out << "\n";
  }
  return out.str();
}

std::string render_html(const std::string& title, const std::vector<ReportSection>& sections) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << svg::escape_xml(title) << "</title>\n"
      << "<style>body{font-family:Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}figure{margin:1em 0}figcaption{color:#555;font-size:90%}"
         ".source{color:#777;font-size:85%}</style>\n</head>\n<body>\n<h1>"
      << svg::escape_xml(title) << "</h1>\n";
  for (const ReportSection& s : sections) {
    out << "<section>\n<h2>" << svg::escape_xml(s.title) << "</h2>\n<p class=\"source\">from " << svg::escape_xml(s.source) << "</p>\n<ul>\n";
    for (const std::string& fact : s.facts) out << "<li>" << svg::escape_xml(fact) << "</li>\n";
    out << "</ul>\n";
    for (const ReportChart& c : s.charts) out << "<figure>\n" << c.svg << "<figcaption>" << svg::escape_xml(c.caption) << "</figcaption>\n</figure>\n";
    if (!s.table.empty()) {
      out << "<table>\n";
      for (size_t row = 0; row < s.table.size(); ++row) {
        out << "<tr>";
        for (const std::string& cell : s.table[row]) out << (row == 0 ? "<th>" : "<td>") << svg::escape_xml(cell) << (row == 0 ? "</th>" : "</td>");
        out << "</tr>\n";
      }
      out << "</table>\n";
    }
    out << "</section>\n";
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace trainsim
