// Goodput of a training run on hardware that fails: the job's mean time between failures (failures
// scale with GPUs), Young's and Daly's optimal checkpoint intervals, the expected fraction of wall
// time spent on useful work (Daly 2006's exponential-failure model), and the effective days and $
// to train N tokens, also swept over the checkpoint interval and the cluster size. Pure functions;
// formulas and sources in docs/goodput.md. Checkpoint bytes and seconds come from checkpoint_cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/hardware_profile.hpp"
#include "sim/checkpoint_cost.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

// Llama 3 pre-training: 419 unexpected interruptions in 54 days on 16,384 H100 GPUs (Llama Team
// 2024, "The Llama 3 Herd of Models", §3.3.4, Table 5; 78% attributed to hardware): one every
// 54 * 24 * 16,384 / 419 = 50,677 GPU-hours.
inline constexpr double kLlama3GpuMtbfHours = 54.0 * 24.0 * 16384.0 / 419.0;
// Relaunch, NCCL set-up and warm-up before the checkpoint is read: 10 min, the restart time of
// Daly 2006's worked examples (Figs. 3-5). An assumption, not a measurement: set --restart-s.
inline constexpr double kDefaultRestartS = 600.0;

struct GoodputSettings {
  double gpu_mtbf_hours = kLlama3GpuMtbfHours;  // per GPU; the job's MTBF is this / GPUs
  double restart_s = kDefaultRestartS;          // before the checkpoint load (added from CheckpointCost)
  double interval_s = 0;                        // the user's checkpoint interval; 0: Daly's optimum
};

// Closed forms, all in seconds. delta: the per-checkpoint stall; mtbf: the job's mean time between
// failures; restart: downtime per failure before work resumes.
double young_interval_s(double delta_s, double mtbf_s);  // Young 1974: sqrt(2 delta M)
double daly_interval_s(double delta_s, double mtbf_s);   // Daly 2006's higher-order form; M when delta >= 2M
// Daly 2006's complete model: expected wall time to finish `solve_s` of work checkpointing every interval_s.
double daly_wall_time_s(double solve_s, double interval_s, double delta_s, double restart_s, double mtbf_s);
// solve / wall time of that model: the expected fraction of wall time that is useful work.
double daly_goodput(double interval_s, double delta_s, double restart_s, double mtbf_s);
// Young's first-order waste: 1 - delta/tau - (tau + delta)/(2M) - R/M (valid for tau, R << M).
double first_order_goodput(double interval_s, double delta_s, double restart_s, double mtbf_s);

struct GoodputEstimate {
  CheckpointCost checkpoint;
  double job_mtbf_s = 0;
  double interval_s = 0;           // the one used: the user's, or the optimum
  double interval_optimal_s = 0;   // Daly's (async: at least the write time)
  double interval_young_s = 0;
  double interval_iterations = 0;  // interval_s in iterations
  double downtime_per_failure_s = 0;   // restart + checkpoint load (+ the write in flight, async)
  double lost_work_per_failure_s = 0;  // half an interval and its stall (+ the write in flight, async)
  double goodput = 0;                  // at interval_s
  double goodput_optimal = 0;          // at interval_optimal_s
  // With train_tokens > 0: days of useful work, expected wall days, $ and failures.
  double train_days_ideal = 0, train_days_effective = 0, train_usd_effective = 0, failures_expected = 0;
};

struct RunRate {
  int64_t gpus = 0;
  double iteration_time_s = 0;
  double tokens_per_iteration = 0;
  double usd_per_gpu_hour = 0;
  double train_tokens = 0;  // 0: no run length
};

GoodputEstimate estimate_goodput(const CheckpointCost& checkpoint, const RunRate& rate, CheckpointMode mode,
                                 const GoodputSettings& settings);

// The estimate at each interval (the same run otherwise).
std::vector<GoodputEstimate> sweep_interval(const CheckpointCost& checkpoint, const RunRate& rate, CheckpointMode mode,
                                            const GoodputSettings& settings, const std::vector<double>& intervals_s);

// The same plan with dp (and the global batch with it) scaled to each GPU count, the iteration time
// held (ideal weak scaling: the same tokens/s per GPU); counts the plan cannot reach are skipped.
// How goodput and effective time change as failures grow with the cluster.
struct ClusterPoint {
  int64_t gpus = 0;
  GoodputEstimate estimate;
};
std::vector<ClusterPoint> sweep_cluster_size(const ModelSpec& model, const ParallelPlan& plan, int64_t gpus_per_node,
                                             const CheckpointSettings& checkpoint, const RunRate& rate,
                                             const GoodputSettings& settings, const std::vector<int64_t>& gpu_counts);

// Everything a prediction needs to state its goodput: checkpointing, failures, the run's length.
struct GoodputConfig {
  CheckpointSettings checkpoint;
  GoodputSettings failures;
  double train_tokens = 0;
};

// The goodput of one simulated iteration of `plan` on `hardware` (GPU count, GPUs per node, price).
GoodputEstimate goodput_of_plan(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                                double iteration_time_s, const GoodputConfig& config);

// The estimate for the plan as given, and swept over the checkpoint interval (1 min to 12 h) and
// over the cluster size (1/16 to 8 times the plan's GPUs, dp scaled).
struct GoodputStudy {
  GoodputConfig config;
  GoodputEstimate estimate;
  std::vector<GoodputEstimate> by_interval;
  std::vector<ClusterPoint> by_cluster_size;
};
GoodputStudy study_goodput(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                           double iteration_time_s, const GoodputConfig& config);

// A calibrated profile's storage rates (`calibrate cpu` times the checkpoint folder: memory_bound
// tables "storage_write" and "storage_read", bytes per node): per node, no aggregate limit. Empty
// when the profile has no such tables.
std::optional<StorageBandwidth> storage_from_profile(const HardwareProfile& profile, const std::string& path);

}  // namespace trainsim
