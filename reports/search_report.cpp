// Rendering of search results.
#include "reports/search_report.hpp"

#include <algorithm>

#include "common/units.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"
#include "plan/recompute_span.hpp"
#include "reports/goodput_report.hpp"
#include "reports/json_output.hpp"
#include "reports/prediction_report.hpp"
#include "reports/search_answer.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

void SearchReport::add(const Hardware& hardware, Precision precision, SearchResult result) {
  runs.push_back({hardware, precision, std::move(result)});
}

void SearchReport::finish(size_t top) {
  std::vector<RankedPlan> all;
  for (const Run& r : runs) all.insert(all.end(), r.result.plans.begin(), r.result.plans.end());
  std::stable_sort(all.begin(), all.end(), [&](const RankedPlan& a, const RankedPlan& b) {
    return objective_value(a, objective) < objective_value(b, objective);
  });
  for (size_t i : pareto_front(all)) pareto.push_back(all[i]);
  std::sort(pareto.begin(), pareto.end(), [](const RankedPlan& a, const RankedPlan& b) {
    return a.prediction.iteration_time_s < b.prediction.iteration_time_s;
  });
  all.resize(std::min(all.size(), top));
  best = std::move(all);
}

namespace {

}  // namespace

std::string plan_cells_text(const ParallelPlan& p) {
  std::string s = "dp" + std::to_string(p.dp) + " tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp);
  if (p.cp > 1) s += " cp" + std::to_string(p.cp) + (p.cp_comm == CpComm::kAllGather ? ":ag" : p.cp_comm == CpComm::kA2a ? ":a2a" : "");
  if (p.ep > 1) s += " ep" + std::to_string(p.ep);
  if (p.moe_dispatcher != MoeDispatcher::kAllToAll) {  // ep8:ag, ep8:flex (disp:ag with experts apart from TP but no EP)
    s += std::string(p.ep > 1 ? ":" : " disp:") + (p.moe_dispatcher == MoeDispatcher::kFlex ? "flex" : "ag");
  }
  if (p.expert_tp > 0 && p.expert_tp != (p.ep > 1 ? 1 : p.tp)) s += " etp" + std::to_string(p.expert_tp);  // not the default
  if (p.vpp > 1 && !is_zero_bubble(p.schedule)) s += " v" + std::to_string(p.vpp);
  if (is_zero_bubble(p.schedule)) s += std::string(" ") + to_string(p.schedule);  // zb-v: its two chunks implied
  s += " mb" + std::to_string(p.micro_batch) + " z" + std::to_string(p.zero_stage);
  if (p.shard_replicas() > 1) s += "/" + std::to_string(p.shard_ranks());
  s += " " + describe_recompute(p);
  if (p.sequence_parallel) s += p.tp_comm_overlap ? " sp+tpo" : " sp";
  if (p.ep_comm_overlap) s += " epo";
  if (p.precision != Precision::kBf16) s += std::string(" ") + to_string(p.precision);
  return s;
}

namespace {

std::string plan_cells(const ParallelPlan& p) { return plan_cells_text(p); }

// "mem GiB" is the tensors at their peak (the allocated figure PyTorch's max_memory_allocated
// reports); "dev GiB" adds the CUDA context, workspace, NCCL buffers and the allocator's reserve
// (nvidia-smi's figure), on which a plan is judged to fit.
std::string plans_table(const std::vector<RankedPlan>& plans, bool train) {
  const bool goodput = !plans.empty() && plans.front().goodput.has_value();
  std::vector<TextTable::Column> columns = {{"#"},        {"gpu", TextTable::Align::kLeft}, {"gpus"},
                                            {"plan", TextTable::Align::kLeft}, {"iter s"}, {"tok/s/GPU"},
                                            {"MFU"},      {"mem GiB"},   {"dev GiB"}, {"$/iter"},  {"$/M tok"}};
  if (train) {
    columns.push_back({"days"});
    columns.push_back({"$ total"});
  }
  if (goodput) {
    columns.push_back({"goodput"});
    if (train) columns.push_back({"eff. days"});
    if (train) columns.push_back({"eff. $"});
  }
  TextTable t(columns);
  for (size_t i = 0; i < plans.size(); ++i) {
    const RankedPlan& r = plans[i];
    const Prediction& p = r.prediction;
    std::vector<std::string> row = {std::to_string(i + 1), p.hardware.gpu.name, std::to_string(p.hardware.gpus),
                                    plan_cells(p.plan), format_fixed(p.iteration_time_s, 3),
                                    format_fixed(p.tokens_per_s_per_gpu, 1), format_percent(p.mfu),
                                    format_fixed(bytes_to_gib(p.memory.peak().memory.total_bytes()), 1),
                                    format_fixed(bytes_to_gib(p.device.memory.device_used_bytes), 1),
                                    format_fixed(p.usd_per_iteration, 3), format_fixed(r.usd_per_million_tokens, 3)};
    if (train) {
      row.push_back(format_fixed(r.train_days, 1));
      row.push_back(format_si(r.train_usd));
    }
    if (goodput) {
      row.push_back(format_percent(r.goodput->goodput));
      if (train) row.push_back(format_fixed(r.goodput->train_days_effective, 1));
      if (train) row.push_back(format_si(r.goodput->train_usd_effective));
    }
    t.add_row(row);
  }
  return t.render();
}

// Every candidate was pruned for memory (not for a deadline, a budget or the profile's range).
bool none_fits(const SearchResult& s) {
  const auto memory = s.pruned.find("do not fit in memory");
  return s.evaluated > 0 && memory != s.pruned.end() && memory->second == s.evaluated;
}

// The imported plan's line: its layout and throughput beside the best plan's, or why it was not
// simulated.
std::string imported_text(const SearchReport& report) {
  std::string out = "\nImported plan (" + report.imported_file + "): ";
  const ImportedPlanResult& r = *report.imported;
  if (!r.prediction) return out + "not simulated: " + r.not_simulated + "\n";
  const Prediction& p = *r.prediction;
  out += "dp " + std::to_string(p.plan.dp) + " x tp " + std::to_string(p.plan.tp) + " x pp " + std::to_string(p.plan.pp) +
         " x cp " + std::to_string(p.plan.cp) + ", micro-batch " + std::to_string(p.plan.micro_batch) + ", ZeRO-" +
         std::to_string(p.plan.zero_stage) + ", recompute " + describe_recompute(p.plan) + ": ";
  if (!p.fits) return out + "does not fit (" + p.infeasible_reason + ")\n";
  out += format_fixed(p.tokens_per_s_per_gpu, 1) + " tokens/s per GPU, iteration " + format_fixed(p.iteration_time_s, 3) + " s";
  if (!report.best.empty() && p.tokens_per_s_per_gpu > 0) {
    out += "; the best plan above: " + format_fixed(report.best.front().prediction.tokens_per_s_per_gpu / p.tokens_per_s_per_gpu, 2) +
           "x its tokens/s per GPU";
  }
  return out + "\n";
}

nlohmann::ordered_json imported_json(const std::string& file, const ImportedPlanResult& r) {
  nlohmann::ordered_json j;
  j["file"] = file;
  if (!r.prediction) {
    j["not_simulated"] = r.not_simulated;
    return j;
  }
  j["plan"] = plan_to_json(r.prediction->plan);
  const nlohmann::ordered_json result = prediction_result_json(*r.prediction);
  for (const auto& [key, value] : result.items()) j[key] = value;
  return j;
}

}  // namespace

std::string SearchReport::render() const {
  std::string out = "Search: " + model.name + ", objective " + to_string(objective);
  if (global_batch > 0) {
    out += ", global batch " + format_count(global_batch) + " sequences of " + format_count(model.seq_len) + " tokens (" +
           format_count(global_batch * model.seq_len) + " tokens per iteration)";
  }
  if (train_tokens > 0) out += ", training " + format_si(train_tokens) + "tokens";
  out += "\n";
  if (goodput) out += "  goodput: " + describe_goodput_inputs(*goodput) + "\n";
  for (const std::string& r : restrictions) out += "  framework: " + r + "\n";
  const std::string answer = render_search_answer(*this);
  if (!answer.empty()) out += "\n" + answer + "\n";
  for (const Run& r : runs) {
    const SearchResult& s = r.result;
    const std::string precision = r.precision == Precision::kBf16 ? "" : std::string(", ") + to_string(r.precision);
    out += "  " + r.hardware.gpu.name + " x " + std::to_string(r.hardware.gpus) + precision + " (" + std::to_string(r.hardware.gpus_per_node) +
           " per node, " + format_fixed(r.hardware.inter_node_gbps_per_gpu, 0) + " Gb/s per GPU across nodes" +
           (r.hardware.network_source.empty() ? "" : ": " + r.hardware.network_source) + ", $" + format_fixed(r.hardware.usd_per_gpu_hour, 2) +
           "/GPU-hour): " + format_count(s.evaluated) +
           " plans screened (" + format_si(s.screen_plans_per_s) + " plans/s), " + format_count(s.feasible) + " feasible";
    for (const auto& [reason, count] : s.pruned) out += ", " + format_count(count) + " " + reason;
    if (!s.left_out.empty()) {
      int64_t left = 0;
      std::string why;
      for (const auto& [reason, count] : s.left_out) {
        left += count;
        why += (why.empty() ? "" : "; ") + format_count(count) + ": " + reason;
      }
      out += ", " + format_count(left) + " left out (" + why + ")";
    }
    const std::string margin = format_fixed(100 * s.screen_margin, 0) + "% behind the plans shown";
    out += "; " + (s.simulated == 0 && s.stopped_early ? "none simulated (every plan screened over " + margin + ")"
                                                       : std::to_string(s.simulated) + " simulated" +
                                                             (s.stopped_early ? " (the rest screened over " + margin + ")" : "")) +
           "; " + format_fixed(s.elapsed_s, 2) + " s\n";
    if (s.closest_miss && none_fits(s)) {
      out += "  " + r.hardware.gpu.name + " x " + std::to_string(r.hardware.gpus) + ": the closest to fitting, " + plan_cells(*s.closest_miss) +
             ", needs " + format_fixed(bytes_to_gib(s.closest_miss_bytes), 1) + " GiB per GPU (tensors, CUDA context, NCCL) of " +
             format_fixed(bytes_to_gib(r.hardware.gpu.memory_bytes), 1) + "\n";
    }
  }
  for (const std::string& s : skipped) out += "  " + s + "\n";
  if (best.empty()) {
    const bool limits = std::any_of(runs.begin(), runs.end(), [](const Run& r) {
      return r.result.pruned.count("miss the deadline") > 0 || r.result.pruned.count("over the budget") > 0;
    });
    out += "\nNo plan is left to rank (the counts above say why; every ZeRO stage, recomputation and micro-batch size up to "
           "--max-micro-batch was tried). Try more GPUs or a GPU with more memory" +
           std::string(limits ? ", or a later --deadline-days / a larger --budget-usd" : "") + ".\n";
  } else {
    out += "\nBest plans (simulated on the event engine)\n" + plans_table(best, train_tokens > 0);
    out += "\nPareto front of the plans simulated: iteration time vs $ per iteration vs GPUs\n" + plans_table(pareto, train_tokens > 0);
    out += "\nThe best plan in detail\n" + render_prediction_table(best.front().prediction);
  }
  return out + (imported ? imported_text(*this) : "");
}

nlohmann::ordered_json SearchReport::to_json() const {
  nlohmann::ordered_json inputs;
  inputs["model"] = model_to_json(model);
  inputs["objective"] = to_string(objective);
  inputs["train_tokens"] = train_tokens;
  if (global_batch > 0) {
    inputs["global_batch"] = global_batch;
    inputs["seq_len"] = model.seq_len;
    inputs["tokens_per_iteration"] = global_batch * model.seq_len;
  }
  if (deadline_days > 0) inputs["deadline_days"] = deadline_days;
  if (budget_usd > 0) inputs["budget_usd"] = budget_usd;
  if (goodput) inputs["goodput"] = goodput_inputs_json(*goodput);
  nlohmann::ordered_json doc = json_envelope("trainsim.search", inputs);
  int64_t evaluated = 0, feasible = 0;
  double elapsed = 0;
  nlohmann::ordered_json searches = nlohmann::ordered_json::array();
  for (const Run& r : runs) {
    evaluated += r.result.evaluated;
    feasible += r.result.feasible;
    elapsed += r.result.elapsed_s;
    nlohmann::ordered_json pruned = nlohmann::ordered_json::object();
    for (const auto& [reason, count] : r.result.pruned) pruned[reason] = count;
    nlohmann::ordered_json left_out = nlohmann::ordered_json::object();
    for (const auto& [reason, count] : r.result.left_out) left_out[reason] = count;
    searches.push_back({{"gpu", r.hardware.gpu.name}, {"gpus", r.hardware.gpus}, {"gpus_per_node", r.hardware.gpus_per_node},
                        {"inter_node_gbps_per_gpu", r.hardware.inter_node_gbps_per_gpu}, {"usd_per_gpu_hour", r.hardware.usd_per_gpu_hour},
                        {"precision", to_string(r.precision)}, {"evaluated", r.result.evaluated},
                        {"feasible", r.result.feasible}, {"pruned", pruned}, {"left_out", left_out}, {"simulated", r.result.simulated},
                        {"screen_margin", r.result.screen_margin >= 0 ? nlohmann::ordered_json(r.result.screen_margin) : nlohmann::ordered_json()},
                        {"screen_overestimate", r.result.screen_overestimate}, {"stopped_early", r.result.stopped_early},
                        {"screen_plans_per_s", r.result.screen_plans_per_s}, {"elapsed_s", r.result.elapsed_s}});
    if (r.result.closest_miss && none_fits(r.result)) {
      searches.back()["closest_miss"] = {{"plan", plan_to_json(*r.result.closest_miss)},
                                         {"memory_device_gib", bytes_to_gib(r.result.closest_miss_bytes)}};
    }
  }
  doc["evaluated"] = evaluated;
  doc["feasible"] = feasible;
  doc["elapsed_s"] = elapsed;
  doc["searches"] = searches;
  if (!skipped.empty()) doc["skipped"] = skipped;
  if (!restrictions.empty()) doc["framework_restrictions"] = restrictions;
  doc["answer"] = search_answer_json(*this);
  auto plan_json = [](const RankedPlan& r) {
    nlohmann::ordered_json j;
    j["gpu"] = r.prediction.hardware.gpu.name;
    j["gpus"] = r.prediction.hardware.gpus;
    j["plan"] = plan_to_json(r.prediction.plan);
    const nlohmann::ordered_json result = prediction_result_json(r.prediction);
    for (const auto& [key, value] : result.items()) j[key] = value;
    j["usd_per_million_tokens"] = r.usd_per_million_tokens;
    if (r.train_days > 0) {
      j["train_days"] = r.train_days;
      j["train_usd"] = r.train_usd;
    }
    if (r.goodput) j["goodput"] = goodput_estimate_json(*r.goodput);
    j["screen_iteration_time_s"] = r.screen_time_s;
    return j;
  };
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const RankedPlan& r : best) plans.push_back(plan_json(r));
  doc["plans"] = plans;
  nlohmann::ordered_json front = nlohmann::ordered_json::array();
  for (const RankedPlan& r : pareto) front.push_back(plan_json(r));
  doc["pareto"] = front;
  if (imported) doc["imported"] = imported_json(imported_file, *imported);
  return doc;
}

}  // namespace trainsim
