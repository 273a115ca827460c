// Weighted least squares for the alpha-beta model (see collective_fit.hpp), with Eigen. Each
// point gives one row [1/t, S/t] . [alpha, beta] = 1; S is taken in GB to keep the columns of
// similar size, and the solution converted back to seconds per byte.
#include "calibrate/collective_fit.hpp"

#include <cmath>

#include <Eigen/Dense>

#include "common/errors.hpp"
#include "common/units.hpp"

namespace trainsim {

namespace {

double rms_relative_residual(const std::vector<CollectivePoint>& points, double alpha_s, double beta_s_per_byte) {
  double sum = 0;
  for (const CollectivePoint& p : points) {
    const double t = p.timing.median_s;
    const double r = (alpha_s + beta_s_per_byte * p.bytes - t) / t;
    sum += r * r;
  }
  return std::sqrt(sum / static_cast<double>(points.size()));
}

}  // namespace

CollectiveFit fit_alpha_beta(const std::vector<CollectivePoint>& points) {
  TRAINSIM_ASSERT(!points.empty(), "an alpha-beta fit needs at least one point");
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd a(n, 2);
  for (Eigen::Index i = 0; i < n; ++i) {
    const CollectivePoint& p = points[static_cast<size_t>(i)];
    TRAINSIM_ASSERT(p.timing.median_s > 0 && p.bytes > 0, "fitted points need positive bytes and times");
    a(i, 0) = 1.0 / p.timing.median_s;
    a(i, 1) = bytes_to_gb(p.bytes) / p.timing.median_s;
  }
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
  double alpha = 0, beta_per_gb = 0;
  if (n >= 2) {
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(ones);
    alpha = x(0);
    beta_per_gb = x(1);
  }
  // One column alone minimises sum (c_i x - 1)^2 at x = sum c_i / sum c_i^2.
  auto single = [&](int column) { return a.col(column).sum() / a.col(column).squaredNorm(); };
  if (n < 2 || alpha < 0) {
    alpha = 0;
    beta_per_gb = single(1);
  } else if (beta_per_gb < 0) {
    beta_per_gb = 0;
    alpha = single(0);
  }
  CollectiveFit fit;
  fit.alpha_s = alpha;
  fit.beta_s_per_byte = beta_per_gb / kBytesPerGB;
  fit.residual_rms_rel = rms_relative_residual(points, fit.alpha_s, fit.beta_s_per_byte);
  return fit;
}

std::string eigen_version() {
  return std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION);
}

}  // namespace trainsim
