// The software a published run ran, as its record places it in time: the framework preset of its
// era. Megatron runs from before fused attention, userbuffers or the asynchronous TP all-reduce
// (known by their group), torchtitan runs from before its compiled loss or its micro-batch default
// (known by the first date their `source` names). docs/validation.md lists the defaults.
#pragma once

#include <string>

#include "plan/framework_preset.hpp"

namespace trainsim {

// `preset` as it was for a run of `group` whose source is `source`.
FrameworkPreset preset_of_era(FrameworkPreset preset, const std::string& group, const std::string& source);

}  // namespace trainsim
