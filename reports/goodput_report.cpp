// Rendering of goodput estimates.
#include "reports/goodput_report.hpp"

#include "common/units.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

nlohmann::ordered_json goodput_inputs_json(const GoodputConfig& c) {
  const StorageBandwidth& s = c.checkpoint.storage;
  nlohmann::ordered_json j;
  j["gpu_mtbf_hours"] = c.failures.gpu_mtbf_hours;
  j["restart_s"] = c.failures.restart_s;
  j["checkpoint_mode"] = to_string(c.checkpoint.mode);
  j["checkpoint_layout"] = to_string(c.checkpoint.layout);
  j["checkpoint_interval_s"] = c.failures.interval_s > 0 ? nlohmann::ordered_json(c.failures.interval_s) : nlohmann::ordered_json();
  j["storage_write_gb_per_s_total"] = bytes_per_s_to_gb_per_s(s.write_bytes_per_s_total);
  j["storage_read_gb_per_s_total"] = bytes_per_s_to_gb_per_s(s.read_bytes_per_s_total);
  j["storage_write_gb_per_s_per_node"] = bytes_per_s_to_gb_per_s(s.write_bytes_per_s_per_node);
  j["storage_read_gb_per_s_per_node"] = bytes_per_s_to_gb_per_s(s.read_bytes_per_s_per_node);
  j["storage_source"] = s.source;
  j["host_copy_gb_per_s"] = bytes_per_s_to_gb_per_s(c.checkpoint.host_copy_bytes_per_s);
  j["train_tokens"] = c.train_tokens;
  return j;
}

std::string describe_goodput_inputs(const GoodputConfig& c) {
  return std::string(to_string(c.checkpoint.mode)) + " checkpoints (" + to_string(c.checkpoint.layout) + ") every " +
         (c.failures.interval_s > 0 ? format_fixed(c.failures.interval_s / 60.0, 1) + " min" : std::string("Daly's optimum")) +
         ", per-GPU MTBF " + format_fixed(c.failures.gpu_mtbf_hours, 0) + " h, restart " + format_fixed(c.failures.restart_s, 0) +
         " s, storage: " + c.checkpoint.storage.source;
}

namespace {

nlohmann::ordered_json checkpoint_json(const CheckpointCost& c) {
  return {{"held_per_rank_bytes", c.held_bytes_per_rank}, {"written_per_rank_bytes", c.written_bytes_per_rank},
          {"written_total_bytes", c.written_bytes_total}, {"read_total_bytes", c.read_bytes_total},
          {"save_s", c.save_s}, {"load_s", c.load_s}, {"host_copy_s", c.host_copy_s}, {"stall_s", c.stall_s}};
}

}  // namespace

nlohmann::ordered_json goodput_estimate_json(const GoodputEstimate& e) {
  nlohmann::ordered_json j;
  j["goodput"] = e.goodput;
  j["job_mtbf_hours"] = e.job_mtbf_s / 3600.0;
  j["checkpoint_interval_s"] = e.interval_s;
  j["checkpoint_interval_optimal_s"] = e.interval_optimal_s;
  j["checkpoint_stall_s"] = e.checkpoint.stall_s;
  if (e.train_days_effective > 0) {
    j["train_days_effective"] = e.train_days_effective;
    j["train_usd_effective"] = e.train_usd_effective;
  }
  return j;
}

nlohmann::ordered_json goodput_json(const GoodputStudy& study) {
  const GoodputEstimate& e = study.estimate;
  nlohmann::ordered_json j;
  j["inputs"] = goodput_inputs_json(study.config);
  j["checkpoint"] = checkpoint_json(e.checkpoint);
  j["job_mtbf_hours"] = e.job_mtbf_s / 3600.0;
  j["checkpoint_interval_s"] = e.interval_s;
  j["checkpoint_interval_iterations"] = e.interval_iterations;
  j["checkpoint_interval_optimal_s"] = e.interval_optimal_s;
  j["checkpoint_interval_young_s"] = e.interval_young_s;
  j["downtime_per_failure_s"] = e.downtime_per_failure_s;
  j["lost_work_per_failure_s"] = e.lost_work_per_failure_s;
  j["goodput"] = e.goodput;
  j["goodput_optimal"] = e.goodput_optimal;
  if (study.config.train_tokens > 0) {
    j["train_days_ideal"] = e.train_days_ideal;
    j["train_days_effective"] = e.train_days_effective;
    j["train_usd_effective"] = e.train_usd_effective;
    j["failures_expected"] = e.failures_expected;
  }
  nlohmann::ordered_json by_interval = nlohmann::ordered_json::array();
  for (const GoodputEstimate& x : study.by_interval) {
    by_interval.push_back({{"checkpoint_interval_s", x.interval_s}, {"goodput", x.goodput}, {"train_days_effective", x.train_days_effective}});
  }
  j["by_interval"] = by_interval;
  nlohmann::ordered_json by_cluster = nlohmann::ordered_json::array();
  for (const ClusterPoint& x : study.by_cluster_size) {
    by_cluster.push_back({{"gpus", x.gpus}, {"job_mtbf_hours", x.estimate.job_mtbf_s / 3600.0},
                          {"checkpoint_interval_s", x.estimate.interval_s}, {"goodput", x.estimate.goodput},
                          {"train_days_effective", x.estimate.train_days_effective},
                          {"train_usd_effective", x.estimate.train_usd_effective}});
  }
  j["by_cluster_size"] = by_cluster;
  return j;
}

namespace {

std::string minutes(double seconds) { return format_fixed(seconds / 60.0, 1) + " min"; }

}  // namespace

std::string render_goodput_table(const GoodputStudy& study) {
  const GoodputEstimate& e = study.estimate;
  const CheckpointCost& c = e.checkpoint;
  const GoodputConfig& g = study.config;
  std::string out = "\nGoodput: " + describe_goodput_inputs(g) + "\n";
  TextTable t({{"quantity", TextTable::Align::kLeft}, {"value"}});
  t.add_row({"checkpoint written (total / per rank)", format_fixed(bytes_to_gb(c.written_bytes_total), 1) + " GB / " +
                                                          format_fixed(bytes_to_gib(c.written_bytes_per_rank), 2) + " GiB"});
  t.add_row({"checkpoint save / load", format_fixed(c.save_s, 2) + " s / " + format_fixed(c.load_s, 2) + " s"});
  t.add_row({"training stalls per checkpoint", format_fixed(c.stall_s, 2) + " s"});
  t.add_row({"job MTBF (per-GPU " + format_fixed(g.failures.gpu_mtbf_hours, 0) + " h)", format_fixed(e.job_mtbf_s / 3600.0, 2) + " h"});
  t.add_row({"checkpoint interval (" + std::string(g.failures.interval_s > 0 ? "given" : "optimum") + ")",
             minutes(e.interval_s) + " (" + format_fixed(e.interval_iterations, 0) + " iterations)"});
  t.add_row({"optimum: Daly / Young", minutes(e.interval_optimal_s) + " / " + minutes(e.interval_young_s)});
  t.add_row({"downtime / lost work per failure", minutes(e.downtime_per_failure_s) + " / " + minutes(e.lost_work_per_failure_s)});
  t.add_row({"goodput (at the optimum)", format_percent(e.goodput) + " (" + format_percent(e.goodput_optimal) + ")"});
  if (g.train_tokens > 0) {
    t.add_row({"days for " + format_si(g.train_tokens) + "tokens: ideal / effective",
               format_fixed(e.train_days_ideal, 1) + " / " + format_fixed(e.train_days_effective, 1)});
    t.add_row({"cost, effective", "$" + format_si(e.train_usd_effective)});
    t.add_row({"failures expected", format_fixed(e.failures_expected, 0)});
  }
  out += t.render();
  if (!study.by_cluster_size.empty()) {
    TextTable s({{"GPUs"}, {"job MTBF h"}, {"goodput"}, {"days"}, {"$"}});
    for (const ClusterPoint& p : study.by_cluster_size) {
      s.add_row({std::to_string(p.gpus), format_fixed(p.estimate.job_mtbf_s / 3600.0, 2), format_percent(p.estimate.goodput),
                 g.train_tokens > 0 ? format_fixed(p.estimate.train_days_effective, 1) : "-",
                 g.train_tokens > 0 ? format_si(p.estimate.train_usd_effective) : "-"});
    }
    out += "\nGoodput as the cluster grows (dp scaled, same tokens/s per GPU)\n" + s.render();
  }
  return out;
}

}  // namespace trainsim
