// HardwareProfile <-> JSON. Reading is strict: wrong schema or version, unknown keys, non-positive
// or non-finite timings, a GEMM grid with holes, collectives out of byte order — each is an
// InputError naming the file and JSON path.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/hardware_profile.hpp"

namespace trainsim {

nlohmann::ordered_json profile_to_json(const HardwareProfile& profile);
HardwareProfile load_profile(const std::string& path);
HardwareProfile read_profile(const nlohmann::json& doc, const std::string& source);

}  // namespace trainsim
