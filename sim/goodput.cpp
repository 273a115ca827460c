// Young / Daly checkpoint intervals and Daly's expected wall time; docs/goodput.md gives each
// formula, its source and how an asynchronous checkpoint enters it.
#include "sim/goodput.hpp"

#include <algorithm>
#include <cmath>

#include "plan/parallel_plan.hpp"

namespace trainsim {

double young_interval_s(double delta_s, double mtbf_s) { return std::sqrt(2.0 * delta_s * mtbf_s); }

// Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps" (FGCS
// 22(3)): tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta for
// delta < 2M, else M. His Figs. 3-5 (R 10 min, delta 5 min; M 24 h, 6 h, 15 min) give 117, 57 and
// 9.1 min (tests/sim/test_goodput.cpp).
double daly_interval_s(double delta_s, double mtbf_s) {
  if (delta_s >= 2.0 * mtbf_s) return mtbf_s;
  const double ratio = delta_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * delta_s * mtbf_s) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) - delta_s;
}

// Daly 2006's complete model for exponentially distributed failures:
// T_wall = M e^(R/M) (e^((tau + delta)/M) - 1) T_solve / tau.
double daly_wall_time_s(double solve_s, double interval_s, double delta_s, double restart_s, double mtbf_s) {
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + delta_s) / mtbf_s) * solve_s / interval_s;
}

double daly_goodput(double interval_s, double delta_s, double restart_s, double mtbf_s) {
  return 1.0 / daly_wall_time_s(1.0, interval_s, delta_s, restart_s, mtbf_s);
}

// Young 1974: per unit of work, delta / tau is spent writing and, per failure (1/M per second),
// half an interval is redone; R / M adds the restarts.
double first_order_goodput(double interval_s, double delta_s, double restart_s, double mtbf_s) {
  return 1.0 - delta_s / interval_s - interval_s / (2.0 * mtbf_s) - restart_s / mtbf_s;
}

namespace {

// Async: the checkpoint is safe only once its write ends, so a failure rolls back past the write
// in flight (added to the downtime), and an interval shorter than the write stalls for the rest.
double stall_s(const CheckpointCost& c, CheckpointMode mode, double interval_s) {
  return mode == CheckpointMode::kAsync ? c.stall_s + std::max(0.0, c.save_s - interval_s) : c.stall_s;
}

}  // namespace

GoodputEstimate estimate_goodput(const CheckpointCost& c, const RunRate& rate, CheckpointMode mode, const GoodputSettings& s) {
  GoodputEstimate e;
  e.checkpoint = c;
  e.job_mtbf_s = s.gpu_mtbf_hours * 3600.0 / static_cast<double>(std::max<int64_t>(1, rate.gpus));
  const bool async = mode == CheckpointMode::kAsync;
  e.downtime_per_failure_s = s.restart_s + c.load_s + (async ? c.save_s : 0.0);
  e.interval_young_s = young_interval_s(c.stall_s, e.job_mtbf_s);
  e.interval_optimal_s = daly_interval_s(c.stall_s, e.job_mtbf_s);
  if (async) e.interval_optimal_s = std::max(e.interval_optimal_s, c.save_s);
  // A checkpoint happens at an iteration's end: at least one iteration apart.
  e.interval_optimal_s = std::max(e.interval_optimal_s, rate.iteration_time_s);
  e.interval_s = s.interval_s > 0 ? s.interval_s : e.interval_optimal_s;
  if (rate.iteration_time_s > 0) e.interval_iterations = e.interval_s / rate.iteration_time_s;
  const double delta = stall_s(c, mode, e.interval_s);
  e.lost_work_per_failure_s = (e.interval_s + delta) / 2.0 + (async ? c.save_s : 0.0);
  e.goodput = daly_goodput(e.interval_s, delta, e.downtime_per_failure_s, e.job_mtbf_s);
  e.goodput_optimal = daly_goodput(e.interval_optimal_s, stall_s(c, mode, e.interval_optimal_s), e.downtime_per_failure_s, e.job_mtbf_s);
  if (rate.train_tokens > 0 && rate.tokens_per_iteration > 0) {
    const double solve_s = rate.train_tokens / rate.tokens_per_iteration * rate.iteration_time_s;
    const double wall_s = solve_s / e.goodput;
    e.train_days_ideal = solve_s / 86400.0;
    e.train_days_effective = wall_s / 86400.0;
    e.train_usd_effective = wall_s / 3600.0 * static_cast<double>(rate.gpus) * rate.usd_per_gpu_hour;
    e.failures_expected = wall_s / e.job_mtbf_s;
  }
  return e;
}

std::vector<GoodputEstimate> sweep_interval(const CheckpointCost& c, const RunRate& rate, CheckpointMode mode,
                                            const GoodputSettings& s, const std::vector<double>& intervals_s) {
  std::vector<GoodputEstimate> out;
  for (double interval : intervals_s) {
    GoodputSettings at = s;
    at.interval_s = interval;
    out.push_back(estimate_goodput(c, rate, mode, at));
  }
  return out;
}

std::vector<ClusterPoint> sweep_cluster_size(const ModelSpec& model, const ParallelPlan& plan, int64_t gpus_per_node,
                                             const CheckpointSettings& checkpoint, const RunRate& rate,
                                             const GoodputSettings& s, const std::vector<int64_t>& gpu_counts) {
  std::vector<ClusterPoint> out;
  const int64_t model_parallel = plan.tp * plan.pp * plan.cp;
  for (int64_t gpus : gpu_counts) {
    if (gpus % model_parallel != 0) continue;
    ParallelPlan p = plan;
    p.dp = gpus / model_parallel;
    if ((plan.global_batch * p.dp) % plan.dp != 0) continue;
    p.global_batch = plan.global_batch * p.dp / plan.dp;
    if (plan.dp_shard > 0 && (p.dp * p.cp) % plan.dp_shard != 0) continue;
    if (!validate_plan(p, model, "").empty()) continue;
    RunRate r = rate;
    r.gpus = gpus;
    r.tokens_per_iteration = rate.tokens_per_iteration * static_cast<double>(p.dp) / static_cast<double>(plan.dp);
    const CheckpointCost c = estimate_checkpoint(model, p, gpus_per_node, checkpoint);
    out.push_back({gpus, estimate_goodput(c, r, checkpoint.mode, s)});
  }
  return out;
}

GoodputEstimate goodput_of_plan(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                                double iteration_time_s, const GoodputConfig& config) {
  const CheckpointCost c = estimate_checkpoint(model, plan, hardware.gpus_per_node, config.checkpoint);
  RunRate rate;
  rate.gpus = plan.gpus();
  rate.iteration_time_s = iteration_time_s;
  rate.tokens_per_iteration = static_cast<double>(plan.global_batch) * static_cast<double>(model.seq_len);
  rate.usd_per_gpu_hour = hardware.usd_per_gpu_hour;
  rate.train_tokens = config.train_tokens;
  return estimate_goodput(c, rate, config.checkpoint.mode, config.failures);
}

GoodputStudy study_goodput(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                           double iteration_time_s, const GoodputConfig& config) {
  GoodputStudy study;
  study.config = config;
  study.estimate = goodput_of_plan(model, plan, hardware, iteration_time_s, config);
  const CheckpointCost& c = study.estimate.checkpoint;
  RunRate rate;
  rate.gpus = plan.gpus();
  rate.iteration_time_s = iteration_time_s;
  rate.tokens_per_iteration = static_cast<double>(plan.global_batch) * static_cast<double>(model.seq_len);
  rate.usd_per_gpu_hour = hardware.usd_per_gpu_hour;
  rate.train_tokens = config.train_tokens;
  std::vector<double> intervals_s;
  for (double minutes : {1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 240.0, 360.0, 480.0, 720.0}) {
    intervals_s.push_back(minutes * 60.0);
  }
  study.by_interval = sweep_interval(c, rate, config.checkpoint.mode, config.failures, intervals_s);
  std::vector<int64_t> counts;
  for (int shift = -4; shift <= 3; ++shift) {
    const int64_t gpus = shift < 0 ? plan.gpus() >> -shift : plan.gpus() << shift;
    if (gpus >= 1 && (shift >= 0 || (gpus << -shift) == plan.gpus())) counts.push_back(gpus);
  }
  study.by_cluster_size = sweep_cluster_size(model, plan, hardware.gpus_per_node, config.checkpoint, rate, config.failures, counts);
  return study;
}

std::optional<StorageBandwidth> storage_from_profile(const HardwareProfile& profile, const std::string& path) {
  // The largest transfer's rate: small files measure the page cache and the call, not the disk.
  const auto rate = [&](const char* kernel) {
    for (const MemoryBoundTable& t : profile.memory_bound) {
      if (t.kernel == kernel && !t.points.empty() && t.points.back().timing.median_s > 0) {
        return t.points.back().bytes / t.points.back().timing.median_s;
      }
    }
    return 0.0;
  };
  const double write = rate("storage_write"), read = rate("storage_read");
  if (write <= 0 || read <= 0) return std::nullopt;
  StorageBandwidth s;
  s.write_bytes_per_s_per_node = write;
  s.read_bytes_per_s_per_node = read;
  s.source = "measured: " + path;
  return s;
}

}  // namespace trainsim
