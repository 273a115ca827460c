// A short table of what a hardware profile measured: best and median GEMM throughput per dtype,
// copy bandwidth, the largest-size bus bandwidth and alpha-beta fit of each collective.
#pragma once

#include <string>

#include "common/hardware_profile.hpp"

namespace trainsim {

std::string render_profile_summary(const HardwareProfile& profile);

}  // namespace trainsim
