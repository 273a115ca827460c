// The table of plan/torchao_rowwise.hpp, transcribed from the published chart (rows: M then K,
// columns: N), and its interpolation.
#include "plan/torchao_rowwise.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace trainsim {

namespace {

constexpr int kPoints = 6;  // 1024, 2048, 4096, 8192, 16384, 32768 in each of M, K, N
using Row = std::array<double, kPoints>;
constexpr double kLog2First = 10.0;
// Below 1024 the table's first octave (1024 -> 2048) is continued in log2 for one octave, to 512
// (a TP 8 rank's slice of an 8B model's attention: qkv 768 wide, proj's K 512), and held below
// it; above 32768 the last point holds (not measured; the speedup has flattened there). Over
// every shape the smallest value is then 0.24 (M 512, K and N 4096), against 0.38 in the table.
constexpr double kExtrapolatedOctaves = -1.0;

// kSpeedup[M][K][N]
constexpr std::array<std::array<Row, kPoints>, kPoints> kSpeedup{{
    {{{0.42, 0.42, 0.50, 0.51, 0.56, 0.56},  // M 1024
      {0.40, 0.38, 0.42, 0.50, 0.50, 0.56},
      {0.48, 0.43, 0.46, 0.53, 0.57, 0.60},
      {0.45, 0.48, 0.54, 0.62, 0.60, 0.62},
      {0.46, 0.48, 0.54, 0.60, 0.60, 0.61},
      {0.45, 0.50, 0.55, 0.60, 0.62, 0.65}}},
    {{{0.43, 0.43, 0.48, 0.55, 0.62, 0.65},  // M 2048
      {0.38, 0.45, 0.58, 0.65, 0.72, 0.75},
      {0.43, 0.50, 0.68, 0.78, 0.81, 0.82},
      {0.46, 0.58, 0.73, 0.82, 0.87, 0.89},
      {0.48, 0.62, 0.75, 0.83, 0.84, 0.85},
      {0.50, 0.64, 0.75, 0.84, 0.83, 0.99}}},
    {{{0.45, 0.47, 0.57, 0.66, 0.72, 0.76},  // M 4096
      {0.43, 0.53, 0.70, 0.83, 0.90, 0.91},
      {0.44, 0.64, 0.84, 1.01, 1.01, 1.04},
      {0.53, 0.72, 0.91, 1.01, 1.07, 1.13},
      {0.53, 0.74, 0.92, 1.05, 1.10, 1.18},
      {0.54, 0.75, 0.93, 1.02, 1.17, 1.18}}},
    {{{0.48, 0.52, 0.65, 0.77, 0.83, 0.84},  // M 8192
      {0.45, 0.64, 0.82, 1.01, 1.03, 1.06},
      {0.52, 0.76, 1.00, 1.13, 1.17, 1.19},
      {0.59, 0.85, 1.05, 1.20, 1.31, 1.41},
      {0.58, 0.82, 1.03, 1.22, 1.37, 1.40},
      {0.59, 0.82, 1.04, 1.30, 1.36, 1.46}}},
    {{{0.48, 0.58, 0.73, 0.86, 0.85, 0.89},  // M 16384
      {0.51, 0.70, 0.90, 1.05, 1.07, 1.15},
      {0.57, 0.79, 1.02, 1.20, 1.26, 1.40},
      {0.61, 0.87, 1.08, 1.33, 1.39, 1.49},
      {0.59, 0.83, 1.07, 1.34, 1.42, 1.55},
      {0.60, 0.85, 1.16, 1.35, 1.48, 1.72}}},
    {{{0.51, 0.62, 0.77, 0.87, 0.88, 0.94},  // M 32768
      {0.54, 0.73, 0.91, 1.08, 1.14, 1.27},
      {0.59, 0.81, 1.04, 1.28, 1.35, 1.49},
      {0.63, 0.87, 1.11, 1.41, 1.50, 1.62},
      {0.60, 0.83, 1.16, 1.39, 1.49, 1.73},
      {0.63, 0.93, 1.16, 1.48, 1.70, 1.52}}},
}};

struct Bracket {
  int lo;
  double t;  // weight of lo + 1
};

Bracket bracket(int64_t size) {
  const double x = std::clamp(std::log2(static_cast<double>(std::max<int64_t>(size, 1))) - kLog2First, kExtrapolatedOctaves, kPoints - 1.0);
  const int lo = x < 0.0 ? 0 : std::min(static_cast<int>(x), kPoints - 2);  // below the table: the first octave continued
  return {lo, x - lo};
}

}  // namespace

double torchao_rowwise_speedup(int64_t m, int64_t k, int64_t n) {
  const Bracket bm = bracket(m), bk = bracket(k), bn = bracket(n);
  double speedup = 0;
  for (int dm = 0; dm < 2; ++dm) {
    for (int dk = 0; dk < 2; ++dk) {
      for (int dn = 0; dn < 2; ++dn) {
        const double w = (dm ? bm.t : 1 - bm.t) * (dk ? bk.t : 1 - bk.t) * (dn ? bn.t : 1 - bn.t);
        speedup += w * kSpeedup[static_cast<size_t>(bm.lo + dm)][static_cast<size_t>(bk.lo + dk)][static_cast<size_t>(bn.lo + dn)];
      }
    }
  }
  return speedup;
}

}  // namespace trainsim
