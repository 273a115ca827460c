// The GPU calibrator (calibrate/cuda_calibrator.hpp). Without a GPU it must refuse with a
// DeviceError that says why; with one, a quick calibration must give positive timings everywhere
// and busbw wherever collectives were measured. Built only with CUDA.
#ifdef TRAINSIM_HAVE_CUDA

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "calibrate/cuda_calibrator.hpp"
#include "common/errors.hpp"

using namespace trainsim;

namespace {

int visible_gpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

bool positive(const Timing& t) {
  return t.median_s > 0 && t.p10_s > 0 && t.p10_s <= t.median_s && t.median_s <= t.p90_s && t.samples > 0;
}

}  // namespace

TEST_CASE("calibrate_gpu rejects an unknown dtype before touching a GPU") {
  GpuCalibrationOptions options;
  options.dtypes = {"bf61"};
  try {
    calibrate_gpu(options);
    FAIL("calibrate_gpu accepted the dtype bf61");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK_THAT(e.problems()[0], Catch::Contains("\"bf61\"") && Catch::Contains("bf16"));
    CHECK_THAT(e.hint(), Catch::Contains("fp8"));
  }
}

TEST_CASE("calibrate_gpu without a GPU throws a DeviceError that says so") {
  if (visible_gpus() > 0) {
    WARN("a GPU is present: the no-GPU path is not exercised");
    return;
  }
  GpuCalibrationOptions options;
  options.quick = true;
  try {
    calibrate_gpu(options);
    FAIL("calibrate_gpu returned a profile without a GPU");
  } catch (const DeviceError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("needs a CUDA GPU"));
    CHECK_THAT(message, Catch::Contains("cudaGetDeviceCount"));
    CHECK_THAT(message, Catch::Contains("HINT"));
  }
}

TEST_CASE("a quick GPU calibration gives positive timings and busbw") {
  const int gpus = visible_gpus();
  if (gpus == 0) {
    WARN("no GPU: cudaGetDeviceCount finds none, the quick calibration is skipped");
    return;
  }
  std::vector<std::string> lines;
  GpuCalibrationOptions options;
  options.quick = true;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  const HardwareProfile profile = calibrate_gpu(options);
  CHECK_FALSE(lines.empty());

  const ProfileProvenance& p = profile.provenance;
  CHECK(p.device_kind == "gpu");
  CHECK_FALSE(p.device.empty());
  CHECK(p.devices == gpus);
  CHECK(p.sm_count > 0);
  CHECK_FALSE(p.cublas.empty());
  CHECK_FALSE(p.method.empty());

  REQUIRE(profile.gemm.size() >= 3);
  for (const GemmTable& table : profile.gemm) {
    INFO("gemm " << table.dtype);
    CHECK(table.points.size() == table.m_values.size() * table.n_values.size() * table.k_values.size());
    for (const GemmPoint& point : table.points) CHECK(positive(point.timing));
  }
  const std::vector<std::string> kernels = {"copy", "layernorm", "softmax", "gelu", "swiglu", "adam", "h2d", "d2h"};
  REQUIRE(profile.memory_bound.size() == kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    CHECK(profile.memory_bound[i].kernel == kernels[i]);
    for (const MemoryBoundPoint& point : profile.memory_bound[i].points) {
      CHECK(point.bytes > 0);
      CHECK(positive(point.timing));
    }
  }
  REQUIRE(profile.attention.size() == 2);
  for (const AttentionTable& table : profile.attention) {
    CHECK_FALSE(table.points.empty());
    for (const AttentionPoint& point : table.points) CHECK(positive(point.timing));
  }
  if (gpus >= 2) {
    CHECK(profile.collectives.size() == 6);
    for (const CollectiveTable& table : profile.collectives) {
      INFO("collective " << table.kind);
      for (const CollectivePoint& point : table.points) {
        CHECK(positive(point.timing));
        CHECK(point.algbw_gb_per_s > 0);
        CHECK(point.busbw_gb_per_s > 0);
      }
      CHECK(table.fit.beta_s_per_byte > 0);
    }
    REQUIRE(profile.overlap.size() == 1);
    CHECK(profile.overlap[0].gemm_slowdown > 0);
  } else {
    CHECK(profile.collectives.empty());
    CHECK(profile.overlap.empty());
  }
}

#endif  // TRAINSIM_HAVE_CUDA
