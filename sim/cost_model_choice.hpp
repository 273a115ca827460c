// Which cost model prices a prediction: the datasheet model with the shipped constants, or a
// measured profile (with or without extrapolation). One value passed to predict, search and
// validate so they all price the same way.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/hardware_profile.hpp"
#include "sim/cost_model.hpp"

namespace trainsim {

struct CostModelChoice {
  std::optional<HardwareProfile> profile;
  std::string profile_path;
  bool allow_extrapolation = false;
  EfficiencyConstants constants = default_efficiency_constants();

  // `flash2_attention`: the framework's attention kernel (FrameworkPreset::flash2_attention_on_hopper).
  std::unique_ptr<CostModel> make(const Hardware& hardware, Precision precision, bool flash2_attention = false) const;
};

// Ops priced outside the profile's measurements by `cost` (empty for the datasheet model).
std::vector<std::string> extrapolated_ops(const CostModel& cost);

}  // namespace trainsim
