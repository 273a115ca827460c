// Internal to reports/: reading trainsim's JSON outputs for the report (a missing or mistyped key is
// an InputError naming the file and the key), and one report section per kind of output
// (report_sections.cpp). The public entry points are in report_document.hpp.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "reports/report_document.hpp"

namespace trainsim::report_detail {

using nlohmann::json;

// Reads figures from one input file; a missing or mistyped key is an InputError naming both.
class Reader {
 public:
  Reader(const json& doc, const std::string& source) : doc_(doc), source_(source) {}

  const json& at(const std::string& pointer) const {
    const json::json_pointer p(pointer);
    if (!doc_.contains(p)) fail(pointer, "is missing");
    return doc_.at(p);
  }
  double number(const std::string& pointer) const { return number_in(at(pointer), pointer); }
  double number_in(const json& value, const std::string& where) const {
    if (!value.is_number()) fail(where, "is not a number");
    return value.get<double>();
  }
  std::optional<double> maybe_number(const std::string& pointer) const {
    const json::json_pointer p(pointer);
    if (!doc_.contains(p) || !doc_.at(p).is_number()) return std::nullopt;
    return doc_.at(p).get<double>();
  }
  std::string text(const std::string& pointer, const std::string& fallback = "?") const {
    const json::json_pointer p(pointer);
    return doc_.contains(p) && doc_.at(p).is_string() ? doc_.at(p).get<std::string>() : fallback;
  }
  const json& array(const std::string& pointer) const {
    const json& a = at(pointer);
    if (!a.is_array()) fail(pointer, "is not an array");
    return a;
  }
  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw InputError(source_ + ": key " + pointer + " " + what,
                     "pass the JSON that trainsim wrote (predict/search/validate/compare --format json, run --out)");
  }

 private:
  const json& doc_;
  const std::string& source_;
};

// "1.234 s" / "12.3 ms"; a plan object as one line ("DP 8 · TP 2 · ...").
std::string seconds(double s);
std::string plan_summary(const json& plan);

ReportSection prediction_section(const Reader& r, const json& doc);
ReportSection measurement_section(const Reader& r);
ReportSection comparison_section(const Reader& r);
ReportSection search_section(const Reader& r);  // search_section.cpp
ReportSection validation_section(const Reader& r);
ReportSection model_section(const Reader& r);
ReportSection profile_section(const Reader& r);
// Goodput facts and charts of a prediction with a `goodput` block (goodput_charts.cpp).
void add_goodput_charts(const Reader& r, ReportSection& section);

}  // namespace trainsim::report_detail
