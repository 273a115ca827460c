// GPUs and clusters as JSON for reports (`trainsim catalog --format json`, and the inputs echoed
// by later commands): the keys and units of configs/hardware.json, so an entry written out reads
// the same as the catalog entry it came from.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/hardware_catalog.hpp"

namespace trainsim {

nlohmann::ordered_json gpu_to_json(const GpuSpec& gpu);
nlohmann::ordered_json cluster_to_json(const ClusterSpec& cluster);

}  // namespace trainsim
