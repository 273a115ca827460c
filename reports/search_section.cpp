// The report's section of a search (`trainsim.search`): its answer first (best plan, days, $,
// goodput, deadline, each GPU type's best, the cost model's error band), the ranked plans, and time
// against cost with a series per GPU type.
#include <algorithm>

#include "reports/report_sections.hpp"
#include "reports/svg_chart.hpp"
#include "reports/text_table.hpp"

namespace trainsim::report_detail {

namespace {

// The answer block of a search (key "answer"): the best plan with days, $, goodput and the
// deadline, each GPU type's best at its own price, and the cost model's error band.
void add_search_answer(const Reader& r, ReportSection& s) {
  const json::json_pointer at("/answer");
  if (!r.at("").contains(at) || r.at("/answer").is_null()) return;
  const auto outcome = [&](const std::string& p) {
    std::string out = r.text(p + "/plan") + " on " + std::to_string(static_cast<int64_t>(r.number(p + "/gpus"))) + " × " +
                      r.text(p + "/gpu") + " at $" + format_fixed(r.number(p + "/usd_per_gpu_hour"), 2) + "/GPU-hour: ";
    if (const auto days = r.maybe_number(p + "/train_days")) {
      out += format_fixed(*days, 1) + " days, $" + format_si(r.number(p + "/train_usd"));
      if (const auto goodput = r.maybe_number(p + "/goodput")) {
        out += ", goodput " + format_percent(*goodput) + " → " + format_fixed(r.number(p + "/train_days_effective"), 1) +
               " effective days, $" + format_si(r.number(p + "/train_usd_effective"));
      }
      return out;
    }
    return out + seconds(r.number(p + "/iteration_time_s")) + " per iteration, $" + format_fixed(r.number(p + "/usd_per_million_tokens"), 3) +
           " per million tokens";
  };
  s.facts.push_back("**Answer** (objective " + r.text("/answer/objective") + "): " + outcome("/answer/best"));
  if (const auto deadline = r.maybe_number("/answer/deadline_days")) {
    s.facts.push_back("deadline " + format_fixed(*deadline, 1) + " days: met (plans that miss it were dropped)");
  }
  if (const auto budget = r.maybe_number("/answer/budget_usd")) s.facts.push_back("budget $" + format_si(*budget) + ": met");
  const json& per_gpu = r.array("/answer/best_per_gpu_type");
  for (size_t i = 0; per_gpu.size() > 1 && i < per_gpu.size(); ++i) {
    s.facts.push_back("best on " + r.text("/answer/best_per_gpu_type/" + std::to_string(i) + "/gpu") + ": " +
                      outcome("/answer/best_per_gpu_type/" + std::to_string(i)));
  }
  s.facts.push_back("cost model: " + r.text("/answer/cost_model"));
  s.facts.push_back("accuracy: " + r.text("/answer/accuracy"));
}

// The ranked plans' points, one series per GPU type, then the Pareto front.
std::vector<svg::Series> search_series(const Reader& r, bool priced) {
  std::vector<svg::Series> series;
  const auto y_of = [&](const std::string& at) {
    return priced ? r.maybe_number(at + "/usd_per_million_tokens").value_or(0.0) : r.number(at + "/memory_peak_gib");
  };
  const json& plans = r.array("/plans");
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string at = "/plans/" + std::to_string(i), gpu = r.text(at + "/gpu");
    auto it = std::find_if(series.begin(), series.end(), [&](const svg::Series& x) { return x.label == gpu; });
    if (it == series.end()) it = series.insert(series.end(), svg::Series{gpu, {}, false});
    it->points.emplace_back(r.number(at + "/iteration_time_s"), y_of(at));
  }
  // Each GPU type's best, so a type none of whose plans made the top K still has its point.
  const json::json_pointer answer("/answer/best_per_gpu_type");
  if (r.at("").contains(answer) && r.at("/answer/best_per_gpu_type").is_array()) {
    const json& per_gpu = r.array("/answer/best_per_gpu_type");
    for (size_t i = 0; i < per_gpu.size(); ++i) {
      const std::string at = "/answer/best_per_gpu_type/" + std::to_string(i), gpu = r.text(at + "/gpu");
      auto it = std::find_if(series.begin(), series.end(), [&](const svg::Series& x) { return x.label == gpu; });
      if (it == series.end()) it = series.insert(series.end(), svg::Series{gpu, {}, false});
      it->points.emplace_back(r.number(at + "/iteration_time_s"), y_of(at));
    }
  }
  svg::Series front{"Pareto front", {}, false};
  if (r.at("/pareto").is_array()) {
    const json& pareto = r.array("/pareto");
    for (size_t i = 0; i < pareto.size(); ++i) {
      const std::string at = "/pareto/" + std::to_string(i);
      front.points.emplace_back(r.number(at + "/iteration_time_s"), y_of(at));
    }
  }
  series.push_back(front);
  return series;
}

}  // namespace

ReportSection search_section(const Reader& r) {
  ReportSection s;
  s.title = "Plan search: " + r.text("/inputs/model/name");
  add_search_answer(r, s);
  s.facts.push_back(std::to_string(static_cast<int64_t>(r.number("/evaluated"))) + " plans evaluated, " +
                    std::to_string(static_cast<int64_t>(r.number("/feasible"))) + " feasible, in " + seconds(r.number("/elapsed_s")) +
                    "; objective: " + r.text("/inputs/objective"));
  const json& plans = r.array("/plans");
  bool priced = false, train = false, goodput = false;
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string at = "/plans/" + std::to_string(i);
    priced = priced || r.number(at + "/cost/usd_per_gpu_hour") > 0;
    train = train || r.maybe_number(at + "/train_days").has_value();
    goodput = goodput || r.maybe_number(at + "/goodput/goodput").has_value();
  }
  std::vector<std::string> header = {"#", "GPUs", "plan", "iteration", "tokens/s/GPU", "MFU", "memory GiB", priced ? "$ per M tokens" : "fits"};
  if (train) header.insert(header.end(), {"days", "$ total"});
  if (goodput) header.push_back("goodput");
  s.table.push_back(header);
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string at = "/plans/" + std::to_string(i);
    std::vector<std::string> row = {
        std::to_string(i + 1), std::to_string(static_cast<int64_t>(r.number(at + "/gpus"))) + " × " + r.text(at + "/gpu"),
        plan_summary(r.at(at + "/plan")), seconds(r.number(at + "/iteration_time_s")), format_si(r.number(at + "/tokens_per_s_per_gpu")),
        format_percent(r.number(at + "/mfu")), format_fixed(r.number(at + "/memory_peak_gib"), 1),
        priced ? format_fixed(r.maybe_number(at + "/usd_per_million_tokens").value_or(0.0), 3) : (r.at(at + "/fits").get<bool>() ? "yes" : "no")};
    if (train) {
      row.push_back(format_fixed(r.maybe_number(at + "/train_days").value_or(0.0), 1));
      row.push_back("$" + format_si(r.maybe_number(at + "/train_usd").value_or(0.0)));
    }
    if (goodput) row.push_back(format_percent(r.maybe_number(at + "/goodput/goodput").value_or(0.0)));
    s.table.push_back(row);
  }
  s.charts.push_back({priced ? "Time against cost: the ranked plans of each GPU type and the Pareto front" : "Time against memory per GPU",
                      svg::xy_chart({"Ranked plans", "iteration time (s)", priced ? "$ per million tokens" : "memory per GPU (GiB)", false, false,
                                     false, search_series(r, priced)})});
  return s;
}

}  // namespace trainsim::report_detail
