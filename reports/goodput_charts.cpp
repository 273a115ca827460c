// The report's goodput charts, drawn from a prediction's `goodput` block (predict with
// --train-tokens or a goodput option): goodput and effective days against the checkpoint interval
// and against the cluster size, with the plan's own point marked. Model and keys: docs/goodput.md.
#include "reports/report_sections.hpp"
#include "reports/svg_chart.hpp"
#include "reports/text_table.hpp"

namespace trainsim::report_detail {

namespace {

// (x, y) of every row of `rows` that has both keys as numbers.
std::vector<std::pair<double, double>> points(const Reader& r, const json& rows, const char* x_key, const char* y_key,
                                              double x_scale, double y_scale) {
  std::vector<std::pair<double, double>> out;
  for (const json& row : rows) {
    out.emplace_back(r.number_in(row.at(x_key), x_key) * x_scale, r.number_in(row.at(y_key), y_key) * y_scale);
  }
  return out;
}

svg::XyChart chart(const char* title, const char* x_label, const char* y_label, bool log_y, svg::Series curve,
                   std::pair<double, double> plan) {
  curve.line = true;
  svg::Series here{"this plan", {plan}, false};
  // Goodput spans a few percent below 100: an axis from 0 would draw it flat.
  svg::XyChart c{title, x_label, y_label, true, log_y, false, {curve, here}};
  c.y_from_zero = false;
  return c;
}

}  // namespace

void add_goodput_charts(const Reader& r, ReportSection& s) {
  const bool tokens = r.number("/goodput/inputs/train_tokens") > 0;
  const double interval_min = r.number("/goodput/checkpoint_interval_s") / 60.0;
  const double gpus = r.number("/inputs/hardware/gpus");
  s.facts.push_back("goodput " + format_percent(r.number("/goodput/goodput")) + " with a checkpoint every " +
                    format_fixed(interval_min, 1) + " min (optimum " + format_fixed(r.number("/goodput/checkpoint_interval_optimal_s") / 60.0, 1) +
                    " min), job MTBF " + format_fixed(r.number("/goodput/job_mtbf_hours"), 2) + " h" +
                    (tokens ? "; " + format_fixed(r.number("/goodput/train_days_effective"), 1) + " effective days, $" +
                                  format_si(r.number("/goodput/train_usd_effective"))
                            : ""));
  const json& by_interval = r.array("/goodput/by_interval");
  const json& by_size = r.array("/goodput/by_cluster_size");
  s.charts.push_back({"Goodput against the checkpoint interval",
                      svg::xy_chart(chart("Goodput", "checkpoint interval (min)", "goodput (%)", false,
                                          {"goodput", points(r, by_interval, "checkpoint_interval_s", "goodput", 1.0 / 60, 100)},
                                          {interval_min, 100 * r.number("/goodput/goodput")}))});
  if (tokens) {
    s.charts.push_back({"Effective days against the checkpoint interval",
                        svg::xy_chart(chart("Effective days to train", "checkpoint interval (min)", "days", false,
                                            {"effective days", points(r, by_interval, "checkpoint_interval_s", "train_days_effective", 1.0 / 60, 1)},
                                            {interval_min, r.number("/goodput/train_days_effective")}))});
  }
  s.charts.push_back({"Goodput against the cluster size",
                      svg::xy_chart(chart("Goodput as the cluster grows", "GPUs", "goodput (%)", false,
                                          {"goodput", points(r, by_size, "gpus", "goodput", 1, 100)},
                                          {gpus, 100 * r.number("/goodput/goodput")}))});
  if (tokens) {
    s.charts.push_back({"Effective days against the cluster size",
                        svg::xy_chart(chart("Effective days to train", "GPUs", "days", true,
                                            {"effective days", points(r, by_size, "gpus", "train_days_effective", 1, 1)},
                                            {gpus, r.number("/goodput/train_days_effective")}))});
  }
}

}  // namespace trainsim::report_detail
