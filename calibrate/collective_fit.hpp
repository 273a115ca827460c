// Alpha-beta fit of a collective's measured times, t = alpha + beta x bytes, by least squares
// weighted by 1/t (relative error) with Eigen; residuals are kept with the fit.
#pragma once

#include <vector>

#include "common/hardware_profile.hpp"

namespace trainsim {

CollectiveFit fit_alpha_beta(const std::vector<CollectivePoint>& points);

}  // namespace trainsim
