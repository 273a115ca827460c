// Fills the run part of a profile's provenance: host, UTC date, trainsim version and git
// revision, from common/provenance. Plain C++ (no nlohmann/json in this header), so the CUDA
// calibrator can call it; the device part is the calibrator's own.
#pragma once

#include "common/hardware_profile.hpp"

namespace trainsim {

void stamp_provenance(ProfileProvenance& provenance);

}  // namespace trainsim
