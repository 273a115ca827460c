// The alpha-beta fit of collectives (calibrate/collective_fit.hpp) on synthetic points.
#include <catch2/catch.hpp>

#include <vector>

#include "calibrate/collective_fit.hpp"

using namespace trainsim;

namespace {

std::vector<CollectivePoint> points_of(double alpha_s, double beta_s_per_byte, double first_bytes) {
  std::vector<CollectivePoint> points;
  for (double bytes = first_bytes; bytes <= 1073741824.0; bytes *= 4) {
    CollectivePoint p;
    p.bytes = bytes;
    p.timing.median_s = p.timing.p10_s = p.timing.p90_s = alpha_s + beta_s_per_byte * bytes;
    p.timing.samples = 10;
    points.push_back(p);
  }
  return points;
}

}  // namespace

TEST_CASE("the alpha-beta fit recovers latency and bandwidth from exact points") {
  const double alpha = 20e-6, beta = 1.0 / 100e9;  // 20 us, 100 GB/s
  const CollectiveFit fit = fit_alpha_beta(points_of(alpha, beta, 1024));
  CHECK(fit.alpha_s == Approx(alpha).epsilon(1e-6));
  CHECK(fit.beta_s_per_byte == Approx(beta).epsilon(1e-6));
  CHECK(fit.residual_rms_rel < 1e-9);
}

TEST_CASE("the alpha-beta fit weighs small messages by their relative error") {
  // 10 % noise, alternating in sign: the relative residual is about 10 % whatever the size.
  std::vector<CollectivePoint> points = points_of(10e-6, 1.0 / 200e9, 1024);
  for (size_t i = 0; i < points.size(); ++i) points[i].timing.median_s *= i % 2 == 0 ? 1.1 : 0.9;
  const CollectiveFit fit = fit_alpha_beta(points);
  CHECK(fit.alpha_s == Approx(10e-6).epsilon(0.15));
  CHECK(fit.beta_s_per_byte == Approx(1.0 / 200e9).epsilon(0.15));
  CHECK(fit.residual_rms_rel == Approx(0.1).epsilon(0.2));
}

TEST_CASE("a fit that would need a negative latency keeps alpha at zero") {
  std::vector<CollectivePoint> points = points_of(-50e-6, 1.0 / 100e9, 16.0 * 1048576);  // t > 0 from 16 MiB
  const CollectiveFit fit = fit_alpha_beta(points);
  CHECK(fit.alpha_s == 0);
  CHECK(fit.beta_s_per_byte > 0);
  CHECK(fit.residual_rms_rel < 0.5);
}

TEST_CASE("a single point is fitted as bandwidth alone") {
  const CollectiveFit fit = fit_alpha_beta(points_of(0, 1.0 / 50e9, 1073741824.0));
  CHECK(fit.alpha_s == 0);
  CHECK(fit.beta_s_per_byte == Approx(1.0 / 50e9));
}
