// Weighted least squares with Eigen's QR.
#include "calibrate/collective_fit.hpp"

#include <Eigen/Dense>
#include <cmath>

namespace trainsim {

CollectiveFit fit_alpha_beta(const std::vector<CollectivePoint>& points) {
  CollectiveFit fit;
  if (points.size() < 2) return fit;
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const CollectivePoint& p = points[static_cast<size_t>(i)];
    const double w = 1.0 / p.timing.median_s;  // minimise relative error
    a(i, 0) = w;
    a(i, 1) = w * p.bytes;
    b(i) = 1.0;
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
  fit.alpha_s = std::max(0.0, x(0));
  fit.beta_s_per_byte = std::max(0.0, x(1));
  double sum = 0;
  for (const CollectivePoint& p : points) {
    const double predicted = fit.alpha_s + fit.beta_s_per_byte * p.bytes;
    sum += std::pow(predicted / p.timing.median_s - 1.0, 2);
  }
  fit.residual_rms_rel = std::sqrt(sum / static_cast<double>(points.size()));
  return fit;
}

}  // namespace trainsim
