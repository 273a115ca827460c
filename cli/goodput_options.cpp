// Binding and resolution of the goodput options; defaults and their sources in sim/goodput.hpp,
// sim/checkpoint_cost.hpp and docs/goodput.md.
#include "cli/goodput_options.hpp"

#include <CLI/CLI.hpp>

#include <vector>

#include "cli/option_checks.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"

namespace trainsim {

void GoodputOptions::add_to(CLI::App& app, bool with_train_tokens) {
  if (with_train_tokens) {
    options["train-tokens"] = app.add_option("--train-tokens", train_tokens, "tokens to train: report goodput, effective days and $")
;
  }
  options["gpu-mtbf-hours"] = app.add_option("--gpu-mtbf-hours", gpu_mtbf_hours,
                                             "mean hours between interruptions per GPU (default 50677: Llama 3's 419 in 54 days "
                                             "on 16,384 GPUs)");
  options["restart-s"] = app.add_option("--restart-s", restart_s,
                                        "seconds to relaunch and set up the job after a failure, before the checkpoint "
                                        "load (default 600, an assumption)");
  options["checkpoint"] = app.add_option("--checkpoint", mode, "sync (training waits for the write) or async (only the "
                                                                "device-to-host copy stalls)")
                              ->check(CLI::IsMember({"sync", "async"}));
  options["checkpoint-interval-min"] = app.add_option("--checkpoint-interval-min", interval_min,
                                                      "minutes of training between checkpoints (default: Daly's optimum)");
  options["checkpoint-layout"] = app.add_option("--checkpoint-layout", layout,
                                                "deduplicated (each state once: Megatron-Core, PyTorch DCP) or every-rank "
                                                "(each rank writes all it holds: trainsim run)")
                                     ->check(CLI::IsMember({"deduplicated", "every-rank"}));
  options["storage-write-gb-per-s"] = app.add_option("--storage-write-gb-per-s", storage_write_gb_per_s,
                                                     "aggregate checkpoint write rate, GB/s (default 2000: Llama 3's Tectonic)");
  options["storage-read-gb-per-s"] = app.add_option("--storage-read-gb-per-s", storage_read_gb_per_s,
                                                    "aggregate checkpoint read rate, GB/s (default 2000)");
  options["node-storage-write-gb-per-s"] = app.add_option("--node-storage-write-gb-per-s", node_storage_write_gb_per_s,
                                                          "checkpoint write rate per node, GB/s (default 20; a --profile's "
                                                          "measured rate when it has one)");
  options["node-storage-read-gb-per-s"] = app.add_option("--node-storage-read-gb-per-s", node_storage_read_gb_per_s,
                                                         "checkpoint read rate per node, GB/s (default 40, or the profile's)");
  options["host-copy-gb-per-s"] = app.add_option("--host-copy-gb-per-s", host_copy_gb_per_s,
                                                 "device-to-host copy rate per GPU for async checkpoints, GB/s (default 25)");
}

bool GoodputOptions::given(const std::string& name) const {
  const auto it = options.find(name);
  return it != options.end() && it->second->count() > 0;
}

bool GoodputOptions::wanted(double tokens, const CostModelChoice& costs) const {
  if (tokens > 0) return true;
  for (const auto& [name, option] : options) {
    if (option->count() > 0) return true;
  }
  return costs.profile && storage_from_profile(*costs.profile, costs.profile_path).has_value();
}

namespace {

}  // namespace

// Every number given must be positive (restart: not negative) and below a bound no real run
// reaches (so NaN, infinities and 1e300 are refused); all problems reported together.
void GoodputOptions::check() const {
  std::vector<std::string> problems;
  const auto positive = [&](const char* name, double value, double most, const char* what) {
    if (given(name) && !(value > 0 && value <= most)) {
      problems.push_back(std::string("--") + name + ": " + option_number_text(value) + " must be > 0 and at most " + option_number_text(most) +
                         " (" + what + ")");
    }
  };
  positive("train-tokens", train_tokens, 1e18, "tokens to train");
  positive("gpu-mtbf-hours", gpu_mtbf_hours, 1e9, "mean hours between interruptions per GPU");
  positive("checkpoint-interval-min", interval_min, 1e7, "minutes of training between checkpoints");
  positive("storage-write-gb-per-s", storage_write_gb_per_s, 1e6, "GB/s");
  positive("storage-read-gb-per-s", storage_read_gb_per_s, 1e6, "GB/s");
  positive("node-storage-write-gb-per-s", node_storage_write_gb_per_s, 1e6, "GB/s");
  positive("node-storage-read-gb-per-s", node_storage_read_gb_per_s, 1e6, "GB/s");
  positive("host-copy-gb-per-s", host_copy_gb_per_s, 1e6, "GB/s");
  if (given("restart-s") && !(restart_s >= 0 && restart_s <= 1e7)) {
    problems.push_back("--restart-s: " + option_number_text(restart_s) + " must be >= 0 and at most 1e+07 (seconds to relaunch after a failure)");
  }
  if (!problems.empty()) {
    throw InputError(problems, "leave an option out for its documented default (docs/goodput.md §2): e.g. --gpu-mtbf-hours "
                               "50677 is Llama 3's rate");
  }
}

GoodputConfig GoodputOptions::resolve(double tokens, const CostModelChoice& costs) const {
  check();
  GoodputConfig c;
  c.train_tokens = tokens;
  c.failures.gpu_mtbf_hours = gpu_mtbf_hours;
  c.failures.restart_s = restart_s;
  c.failures.interval_s = interval_min * 60.0;
  c.checkpoint.mode = mode == "async" ? CheckpointMode::kAsync : CheckpointMode::kSync;
  c.checkpoint.layout = layout == "every-rank" ? CheckpointLayout::kEveryRank : CheckpointLayout::kDeduplicated;
  StorageBandwidth& s = c.checkpoint.storage;
  if (costs.profile) {
    if (const std::optional<StorageBandwidth> measured = storage_from_profile(*costs.profile, costs.profile_path)) s = *measured;
  }
  const auto set = [&](const char* name, double gb_per_s, double& field) {
    if (given(name)) {
      field = gb_per_s_to_bytes_per_s(gb_per_s);
      s.source = "options";
    }
  };
  set("storage-write-gb-per-s", storage_write_gb_per_s, s.write_bytes_per_s_total);
  set("storage-read-gb-per-s", storage_read_gb_per_s, s.read_bytes_per_s_total);
  set("node-storage-write-gb-per-s", node_storage_write_gb_per_s, s.write_bytes_per_s_per_node);
  set("node-storage-read-gb-per-s", node_storage_read_gb_per_s, s.read_bytes_per_s_per_node);
  if (given("host-copy-gb-per-s")) c.checkpoint.host_copy_bytes_per_s = gb_per_s_to_bytes_per_s(host_copy_gb_per_s);
  return c;
}

}  // namespace trainsim
