// Self-contained SVG charts for `trainsim report`: horizontal stacked bars (a time or memory
// breakdown, with an optional limit line such as the GPU's memory) and x-y charts (points or lines,
// linear or log axes, an optional y = x diagonal). No scripts, no external fonts or styles: the
// SVG renders the same inline in HTML, as a file next to Markdown, or in a browser on its own.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::svg {

// One bar per row, its segments stacked left to right in `segment_labels` order (legend below).
struct StackedBars {
  std::string title;
  std::string unit;                          // axis unit, e.g. "s" or "GiB"
  std::vector<std::string> row_labels;
  std::vector<std::string> segment_labels;
  std::vector<std::vector<double>> values;   // [row][segment], each >= 0
  std::optional<double> limit;               // a vertical line at this value (e.g. GPU memory)
  std::string limit_label;
};

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool line = false;                              // joined in x order, else markers
};

struct XyChart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;  // log axes need positive values (others are left out)
  bool diagonal = false;              // the y = x line (predicted against measured)
  std::vector<Series> series;
  // A linear y axis starts at 0 (false: it spans the data, for figures such as goodput that vary
  // over a few percent near 100).
  bool y_from_zero = true;
};

std::string stacked_bars(const StackedBars& chart);
std::string xy_chart(const XyChart& chart);

// Text for SVG, HTML or XML content and attributes.
std::string escape_xml(const std::string& text);

// Tick positions over [lo, hi]: 1-2-5 steps on a linear axis, decades on a log one.
std::vector<double> axis_ticks(double lo, double hi, bool log);
// A value's compact label (4 significant digits, k/M/G suffixes from 1e4), e.g. for tooltips.
std::string tick_label(double value);
// Labels for an axis's ticks: as many decimals as the step needs, one suffix (k, M, G) for all.
std::vector<std::string> tick_labels(const std::vector<double>& ticks, bool log);

}  // namespace trainsim::svg
