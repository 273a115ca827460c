// SVG charts; see svg_chart.hpp. Coordinates in px on a fixed canvas; text in the system sans font.
#include "reports/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace trainsim::svg {

namespace {

// Eight distinguishable colours (Okabe-Ito, colour-blind safe), then repeated.
const char* colour(size_t i) {
  static const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
  return kPalette[i % 8];
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", x);
  return text;
}

std::string text_element(double x, double y, const std::string& text, const char* anchor = "start", int size = 12,
                         const char* extra = "") {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" font-size=\"" + std::to_string(size) + "\" text-anchor=\"" + anchor +
         "\"" + extra + ">" + escape_xml(text) + "</text>\n";
}

std::string open_svg(double width, double height, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" + number(height) +
         "\" viewBox=\"0 0 " + number(width) + " " + number(height) +
         "\" font-family=\"Helvetica, Arial, sans-serif\" role=\"img\">\n<title>" + escape_xml(title) + "</title>\n" +
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + text_element(width / 2, 20, title, "middle", 14, " font-weight=\"bold\"");
}

// Maps [lo, hi] (or its log) onto [a, b] pixels.
struct Scale {
  double lo, hi, a, b;
  bool log;
  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return a + t * (b - a);
  }
};

// [lo, hi] around the data: from 0 (linear) or the decade below (log) to a round value above.
std::pair<double, double> axis_range(double lo, double hi, bool log, bool from_zero) {
  if (log) {
    lo = std::pow(10.0, std::floor(std::log10(lo)));
    hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo) hi = lo * 10;
    return {lo, hi};
  }
  if (from_zero) lo = std::min(0.0, lo);
  if (hi <= lo) hi = lo + 1;
  const std::vector<double> ticks = axis_ticks(lo, hi, false);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : hi - lo;
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> axis_ticks(double lo, double hi, bool log) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  if (log) {
    for (double d = std::pow(10.0, std::ceil(std::log10(lo) - 1e-9)); d <= hi * (1 + 1e-9); d *= 10) ticks.push_back(d);
    return ticks;
  }
  const double raw = (hi - lo) / 5, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw * (1 - 1e-9)) break;
  }
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string tick_label(double v) {
  const double a = std::abs(v);
  char text[32];
  if (a >= 1e9) {
    std::snprintf(text, sizeof text, "%gG", v / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(text, sizeof text, "%gM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(text, sizeof text, "%gk", v / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.4g", v);
  }
  return text;
}

std::vector<std::string> tick_labels(const std::vector<double>& ticks, bool log) {
  std::vector<std::string> out;
  if (log) {
    for (double t : ticks) out.push_back(tick_label(t));
    return out;
  }
  double largest = 0;
  for (double t : ticks) largest = std::max(largest, std::abs(t));
  const double scale = largest >= 1e9 ? 1e9 : largest >= 1e6 ? 1e6 : largest >= 1e4 ? 1e3 : 1.0;
  const char* suffix = scale == 1e9 ? "G" : scale == 1e6 ? "M" : scale == 1e3 ? "k" : "";
  const double step = ticks.size() > 1 ? (ticks[1] - ticks[0]) / scale : 1.0;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  for (double t : ticks) {
    char text[48];
    std::snprintf(text, sizeof text, "%.*f%s", decimals, t / scale, suffix);
    out.emplace_back(text);
  }
  return out;
}

std::string stacked_bars(const StackedBars& c) {
  const double left = 130, right = 30, top = 40, bar = 26, gap = 14, width = 720;
  const double plot_bottom = top + static_cast<double>(c.row_labels.size()) * (bar + gap);
  const double legend_rows = std::ceil(static_cast<double>(c.segment_labels.size()) / 4.0);
  const double height = plot_bottom + 40 + legend_rows * 20 + 10;
  double largest = c.limit.value_or(0.0);
  for (const auto& row : c.values) {
    double sum = 0;
    for (double v : row) sum += std::max(0.0, v);
    largest = std::max(largest, sum);
  }
  const auto [lo, hi] = axis_range(0.0, largest > 0 ? largest : 1.0, false, true);
  const Scale x{lo, hi, left, width - right, false};
  std::ostringstream out;
  out << open_svg(width, height, c.title);
  const std::vector<double> ticks = axis_ticks(lo, hi, false);
  const std::vector<std::string> labels = tick_labels(ticks, false);
  for (size_t i = 0; i < ticks.size(); ++i) {  // grid and axis labels
    const double t = ticks[i];
    out << "<line x1=\"" << number(x(t)) << "\" y1=\"" << number(top - 4) << "\" x2=\"" << number(x(t)) << "\" y2=\"" << number(plot_bottom)
        << "\" stroke=\"#ddd\"/>\n";
    out << text_element(x(t), plot_bottom + 16, labels[i], "middle", 11);
  }
  out << text_element((left + width - right) / 2, plot_bottom + 32, c.unit, "middle", 11);
  for (size_t r = 0; r < c.row_labels.size(); ++r) {
    const double y = top + static_cast<double>(r) * (bar + gap);
    out << text_element(left - 8, y + bar / 2 + 4, c.row_labels[r], "end");
    double at = 0;
    for (size_t s = 0; s < c.segment_labels.size() && r < c.values.size() && s < c.values[r].size(); ++s) {
      const double v = std::max(0.0, c.values[r][s]);
      if (v <= 0) continue;
      out << "<rect x=\"" << number(x(at)) << "\" y=\"" << number(y) << "\" width=\"" << number(x(at + v) - x(at)) << "\" height=\""
          << number(bar) << "\" fill=\"" << colour(s) << "\"><title>" << escape_xml(c.row_labels[r] + ": " + c.segment_labels[s] + " " +
                                                                                   tick_label(v) + " " + c.unit)
          << "</title></rect>\n";
      at += v;
    }
  }
  if (c.limit) {
    out << "<line x1=\"" << number(x(*c.limit)) << "\" y1=\"" << number(top - 8) << "\" x2=\"" << number(x(*c.limit)) << "\" y2=\""
        << number(plot_bottom) << "\" stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n";
    out << text_element(x(*c.limit) - 4, top - 10, c.limit_label, "end", 11, " fill=\"#c00\"");
  }
  for (size_t s = 0; s < c.segment_labels.size(); ++s) {  // legend, four per line
    const double lx = left + static_cast<double>(s % 4) * 145, ly = plot_bottom + 44 + std::floor(static_cast<double>(s) / 4) * 20;
    out << "<rect x=\"" << number(lx) << "\" y=\"" << number(ly - 10) << "\" width=\"12\" height=\"12\" fill=\"" << colour(s) << "\"/>\n";
    out << text_element(lx + 17, ly, c.segment_labels[s], "start", 11);
  }
  out << "</svg>\n";
  return out.str();
}

namespace {

// The x-y plot's frame: grid lines and tick labels on both axes, the axis titles.
std::string grid_and_labels(const XyChart& c, const Scale& x, const Scale& y) {
  const double left = x.a, right_edge = x.b, top = y.b, bottom = y.a;
  std::ostringstream out;
  const std::vector<double> x_ticks = axis_ticks(x.lo, x.hi, c.log_x), y_ticks = axis_ticks(y.lo, y.hi, c.log_y);
  const std::vector<std::string> x_labels = tick_labels(x_ticks, c.log_x), y_labels = tick_labels(y_ticks, c.log_y);
  for (size_t i = 0; i < x_ticks.size(); ++i) {
    const double t = x_ticks[i];
    out << "<line x1=\"" << number(x(t)) << "\" y1=\"" << number(top) << "\" x2=\"" << number(x(t)) << "\" y2=\"" << number(bottom)
        << "\" stroke=\"#ddd\"/>\n";
    out << text_element(x(t), bottom + 16, x_labels[i], "middle", 11);
  }
  for (size_t i = 0; i < y_ticks.size(); ++i) {
    const double t = y_ticks[i];
    out << "<line x1=\"" << number(left) << "\" y1=\"" << number(y(t)) << "\" x2=\"" << number(right_edge) << "\" y2=\"" << number(y(t))
        << "\" stroke=\"#ddd\"/>\n";
    out << text_element(left - 6, y(t) + 4, y_labels[i], "end", 11);
  }
  out << "<rect x=\"" << number(left) << "\" y=\"" << number(top) << "\" width=\"" << number(right_edge - left) << "\" height=\""
      << number(bottom - top) << "\" fill=\"none\" stroke=\"#888\"/>\n";
  out << text_element((left + right_edge) / 2, bottom + 34, c.x_label, "middle", 12);
  out << "<text transform=\"translate(16," << number((top + bottom) / 2) << ") rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">"
      << escape_xml(c.y_label) << "</text>\n";
  return out.str();
}

// One series: a polyline in x order, or a marker per point; points a log axis cannot show left out.
template <class Usable>
std::string series_marks(const Series& s, const char* fill, const Scale& x, const Scale& y, const Usable& usable) {
  std::ostringstream out;
  std::vector<std::pair<double, double>> points;
  for (const auto& p : s.points) {
    if (usable(p.first, p.second)) points.push_back(p);
  }
  if (s.line) {
    std::sort(points.begin(), points.end());
    out << "<polyline fill=\"none\" stroke=\"" << fill << "\" stroke-width=\"2\" points=\"";
    for (const auto& [px, py] : points) out << number(x(px)) << "," << number(y(py)) << " ";
    out << "\"><title>" << escape_xml(s.label) << "</title></polyline>\n";
  } else {
    for (const auto& [px, py] : points) {
      out << "<circle cx=\"" << number(x(px)) << "\" cy=\"" << number(y(py)) << "\" r=\"4\" fill=\"" << fill
          << "\" fill-opacity=\"0.8\"><title>" << escape_xml(s.label + ": " + tick_label(px) + ", " + tick_label(py)) << "</title></circle>\n";
    }
  }
  return out.str();
}

}  // namespace

std::string xy_chart(const XyChart& c) {
  const double left = 70, right = 20, top = 40, width = 720, plot_h = 320;
  const double legend_rows = std::ceil(static_cast<double>(c.series.size()) / 3.0);
  const double height = top + plot_h + 48 + legend_rows * 20;
  const auto usable = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && (!c.log_x || x > 0) && (!c.log_y || y > 0);
  };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : c.series) {
    for (const auto& [px, py] : s.points) {
      if (!usable(px, py)) continue;
      x_lo = std::min(x_lo, px), x_hi = std::max(x_hi, px), y_lo = std::min(y_lo, py), y_hi = std::max(y_hi, py);
    }
  }
  if (!std::isfinite(x_lo)) x_lo = c.log_x ? 1 : 0, x_hi = c.log_x ? 10 : 1, y_lo = c.log_y ? 1 : 0, y_hi = c.log_y ? 10 : 1;
  if (c.diagonal) {  // the same range on both axes
    x_lo = y_lo = std::min(x_lo, y_lo);
    x_hi = y_hi = std::max(x_hi, y_hi);
  }
  if (!c.log_x && x_hi <= x_lo) x_hi = x_lo + 1;
  if (!c.log_y && y_hi <= y_lo) y_hi = y_lo + 1;
  const auto [xa, xb] = axis_range(x_lo, x_hi, c.log_x, false);
  if (!c.log_y && !c.y_from_zero && y_hi - y_lo < 1e-9 * std::max(1.0, std::abs(y_hi))) y_lo -= 1, y_hi += 1;
  const auto [ya, yb] = axis_range(y_lo, y_hi, c.log_y, !c.diagonal && c.y_from_zero);
  const Scale x{xa, xb, left, width - right, c.log_x}, y{ya, yb, top + plot_h, top, c.log_y};
  std::ostringstream out;
  out << open_svg(width, height, c.title);
  out << grid_and_labels(c, x, y);
  if (c.diagonal) {
    out << "<line x1=\"" << number(x(xa)) << "\" y1=\"" << number(y(xa)) << "\" x2=\"" << number(x(xb)) << "\" y2=\"" << number(y(xb))
        << "\" stroke=\"#888\" stroke-dasharray=\"4 4\"/>\n";
  }
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    out << series_marks(s, colour(i), x, y, usable);
    const double lx = left + static_cast<double>(i % 3) * 210, ly = top + plot_h + 56 + std::floor(static_cast<double>(i) / 3) * 20;
    out << "<rect x=\"" << number(lx) << "\" y=\"" << number(ly - 10) << "\" width=\"12\" height=\"12\" fill=\"" << colour(i) << "\"/>\n";
    out << text_element(lx + 17, ly, s.label, "start", 11);
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace trainsim::svg
