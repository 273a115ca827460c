// GPUs and clusters as JSON for reports (`trainsim catalog --format json`, and the inputs echoed
// by later commands): the keys and units of configs/hardware.json, so an entry written out reads
// the same as the catalog entry it came from. A prediction echoes a GPU's datasheet figures
// (gpu_to_json); the whole catalog entry adds the capabilities the cost model keys on.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/hardware_catalog.hpp"

namespace trainsim {

// The datasheet figures and price (every key of a catalog GPU but "capabilities").
nlohmann::ordered_json gpu_to_json(const GpuSpec& gpu);
// "capabilities" of a catalog GPU: generation, reference set, NVLink, NCCL's LL cap, workspace, NIC.
nlohmann::ordered_json gpu_capabilities_to_json(const GpuCapabilities& capabilities);
// The whole catalog entry: gpu_to_json and its "capabilities".
nlohmann::ordered_json gpu_catalog_entry_to_json(const GpuSpec& gpu);
nlohmann::ordered_json cluster_to_json(const ClusterSpec& cluster);

}  // namespace trainsim
