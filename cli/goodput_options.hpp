// Options of predict and search that say how the run checkpoints and how often the hardware fails
// (`--train-tokens --gpu-mtbf-hours --restart-s --checkpoint --checkpoint-interval-min
// --checkpoint-layout --storage-*-gb-per-s --node-storage-*-gb-per-s --host-copy-gb-per-s`), resolved
// into a GoodputConfig: flags over a --profile's measured storage over the documented defaults.
#pragma once

#include <map>
#include <string>

#include "sim/cost_model_choice.hpp"
#include "sim/goodput.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace trainsim {

struct GoodputOptions {
  double train_tokens = 0, gpu_mtbf_hours = kLlama3GpuMtbfHours, restart_s = kDefaultRestartS, interval_min = 0;
  std::string mode = "sync", layout = "deduplicated";
  double storage_write_gb_per_s = 0, storage_read_gb_per_s = 0;
  double node_storage_write_gb_per_s = 0, node_storage_read_gb_per_s = 0, host_copy_gb_per_s = 0;
  std::map<std::string, CLI::Option*> options;

  // `with_train_tokens`: also bind --train-tokens (search binds its own).
  void add_to(CLI::App& app, bool with_train_tokens);
  bool given(const std::string& name) const;
  // Whether to report goodput: --train-tokens, any of these flags, or a profile that measured storage.
  bool wanted(double train_tokens, const CostModelChoice& costs) const;
  GoodputConfig resolve(double train_tokens, const CostModelChoice& costs) const;
  // Throws InputError naming every goodput option given out of range (resolve checks too; a
  // command checks first so that a plan which does not fit still gets the message).
  void check() const;
};

}  // namespace trainsim
