// Cost model construction.
#include "sim/cost_model_choice.hpp"

#include "sim/profiled_cost_model.hpp"

namespace trainsim {

std::unique_ptr<CostModel> CostModelChoice::make(const Hardware& hardware, Precision precision, bool flash2_attention) const {
  if (profile) {
    return std::make_unique<ProfiledCostModel>(*profile, profile_path, hardware, precision, allow_extrapolation, constants);
  }
  return std::make_unique<DatasheetCostModel>(hardware, precision, constants, flash2_attention);
}

std::vector<std::string> extrapolated_ops(const CostModel& cost) {
  const auto* profiled = dynamic_cast<const ProfiledCostModel*>(&cost);
  if (profiled == nullptr) return {};
  const std::set<std::string> ops = profiled->extrapolated();
  return {ops.begin(), ops.end()};
}

}  // namespace trainsim
