// The answer of a search (reports/search_answer.hpp).
#include "reports/search_answer.hpp"

#include <algorithm>
#include <map>

#include "reports/text_table.hpp"
#include "sim/cost_model.hpp"

namespace trainsim {

namespace {

std::string price_text(const Hardware& hw) { return "$" + format_fixed(hw.usd_per_gpu_hour, 2) + "/GPU-hour"; }

// "19.3 days, $148 k" (+ goodput and effective figures), or the iteration's figures without tokens.
std::string outcome(const SearchReport& report, const RankedPlan& r) {
  const Prediction& p = r.prediction;
  if (report.train_tokens <= 0) {
    return format_fixed(p.iteration_time_s, 3) + " s per iteration, " + format_fixed(p.tokens_per_s_per_gpu, 1) +
           " tokens/s per GPU, $" + format_fixed(r.usd_per_million_tokens, 3) + " per M tokens";
  }
  std::string out = format_fixed(r.train_days, 1) + " days, $" + format_si(r.train_usd);
  if (r.goodput) {
    out += "; goodput " + format_percent(r.goodput->goodput) + " -> " + format_fixed(r.goodput->train_days_effective, 1) +
           " effective days, $" + format_si(r.goodput->train_usd_effective);
  }
  return out;
}

double days_of(const RankedPlan& r) { return r.goodput ? r.goodput->train_days_effective : r.train_days; }
double usd_of(const RankedPlan& r) { return r.goodput ? r.goodput->train_usd_effective : r.train_usd; }

// "deadline 30 days: met (10.7 days to spare); budget $200 k: met ($52 k left)".
std::string limits_text(const SearchReport& report, const RankedPlan& r) {
  std::string out;
  if (report.deadline_days > 0) {
    out += "deadline " + format_fixed(report.deadline_days, 1) + " days: met (" + format_fixed(report.deadline_days - days_of(r), 1) +
           " days to spare)";
  }
  if (report.budget_usd > 0) {
    out += std::string(out.empty() ? "" : "; ") + "budget $" + format_si(report.budget_usd) + ": met ($" +
           format_si(report.budget_usd - usd_of(r)) + " left)";
  }
  return out;
}

}  // namespace

std::vector<RankedPlan> best_per_gpu_type(const SearchReport& report) {
  std::map<std::string, RankedPlan> best;
  for (const SearchReport::Run& run : report.runs) {
    if (run.result.plans.empty()) continue;
    const RankedPlan& first = run.result.plans.front();
    const auto it = best.find(run.hardware.gpu.name);
    if (it == best.end() || objective_value(first, report.objective) < objective_value(it->second, report.objective)) {
      best[run.hardware.gpu.name] = first;
    }
  }
  std::vector<RankedPlan> out;
  for (auto& [gpu, plan] : best) out.push_back(std::move(plan));
  std::stable_sort(out.begin(), out.end(), [&](const RankedPlan& a, const RankedPlan& b) {
    return objective_value(a, report.objective) < objective_value(b, report.objective);
  });
  return out;
}

std::string cost_model_error_band(const std::string& cost_model) {
  if (cost_model.rfind("datasheet", 0) == 0) return datasheet_validated_error();
  return "priced from a measured profile: its error on your runs is what `trainsim compare` reports against a measured run";
}

std::string render_search_answer(const SearchReport& report) {
  if (report.best.empty()) return "";
  const RankedPlan& best = report.best.front();
  const Prediction& p = best.prediction;
  std::string out = "Answer (objective " + std::string(to_string(report.objective)) + "): " + plan_cells_text(p.plan) + " on " +
                    std::to_string(p.hardware.gpus) + " x " + p.hardware.gpu.name + " at " + price_text(p.hardware) + "\n";
  out += "  " + std::string(report.train_tokens > 0 ? "training " + format_si(report.train_tokens) + "tokens: " : "") +
         outcome(report, best) + "\n";
  const std::string limits = limits_text(report, best);
  if (!limits.empty()) out += "  " + limits + "\n";
  const std::vector<RankedPlan> per_gpu = best_per_gpu_type(report);
  if (per_gpu.size() > 1) {
    out += "  best of each GPU type:\n";
    for (const RankedPlan& r : per_gpu) {
      const double ratio = objective_value(r, report.objective) / objective_value(per_gpu.front(), report.objective);
      out += "    " + r.prediction.hardware.gpu.name + " (" + price_text(r.prediction.hardware) + ", " +
             std::to_string(r.prediction.hardware.gpus) + " GPUs): " + outcome(report, r) +
             (&r == &per_gpu.front() ? "" : " (" + format_fixed(100 * (ratio - 1), 0) + "% more by the objective)") + "\n";
    }
  }
  out += "  accuracy: " + cost_model_error_band(p.cost_model) + "\n";
  return out;
}

nlohmann::ordered_json search_answer_json(const SearchReport& report) {
  if (report.best.empty()) return nullptr;
  const auto pick = [&](const RankedPlan& r) {
    nlohmann::ordered_json j;
    j["gpu"] = r.prediction.hardware.gpu.name;
    j["gpus"] = r.prediction.hardware.gpus;
    j["usd_per_gpu_hour"] = r.prediction.hardware.usd_per_gpu_hour;
    j["plan"] = plan_cells_text(r.prediction.plan);
    j["iteration_time_s"] = r.prediction.iteration_time_s;
    j["usd_per_million_tokens"] = r.usd_per_million_tokens;
    if (report.train_tokens > 0) {
      j["train_days"] = r.train_days;
      j["train_usd"] = r.train_usd;
    }
    if (r.goodput) {
      j["goodput"] = r.goodput->goodput;
      if (report.train_tokens > 0) j["train_days_effective"] = r.goodput->train_days_effective;
      if (report.train_tokens > 0) j["train_usd_effective"] = r.goodput->train_usd_effective;
    }
    return j;
  };
  nlohmann::ordered_json j;
  j["objective"] = to_string(report.objective);
  j["best"] = pick(report.best.front());
  if (report.deadline_days > 0) j["deadline_days"] = report.deadline_days, j["deadline_met"] = true;
  if (report.budget_usd > 0) j["budget_usd"] = report.budget_usd, j["budget_met"] = true;
  nlohmann::ordered_json per_gpu = nlohmann::ordered_json::array();
  for (const RankedPlan& r : best_per_gpu_type(report)) per_gpu.push_back(pick(r));
  j["best_per_gpu_type"] = per_gpu;
  j["cost_model"] = report.best.front().prediction.cost_model;
  j["accuracy"] = cost_model_error_band(report.best.front().prediction.cost_model);
  return j;
}

}  // namespace trainsim
