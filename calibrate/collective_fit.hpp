// The alpha-beta model of a collective, t(S) = alpha + beta * S, fitted to measured points.
// The fit minimises relative residuals ((alpha + beta S - t) / t), so small messages (latency)
// weigh as much as large ones (bandwidth); alpha and beta are kept >= 0 (a negative one is set to
// 0 and the other refitted). Plain C++, usable from the CUDA sources.
#pragma once

#include <string>
#include <vector>

#include "common/hardware_profile.hpp"

namespace trainsim {

// Uses each point's bytes and median time; needs at least one point.
CollectiveFit fit_alpha_beta(const std::vector<CollectivePoint>& points);

// The Eigen version the fit was built with ("3.4.0"), for the profile's provenance.
std::string eigen_version();

}  // namespace trainsim
