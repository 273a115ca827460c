// The MoE kernels (kernels/cuda/moe.cuh) against loops and the CPU runtime's routing
// backward (runtime/moe_routing.hpp), on random inputs rounded to bf16 first so both sides see the
// same numbers. Error = ||gpu - cpu||_2 / ||cpu||_2 over the tensor; bounds as
// tests/gpu/test_cuda_kernels.cpp: row moves without a scale are exact (a bf16 copied through fp32);
// bf16 outputs of fp32 math 1e-2 (one rounding, 2^-9 per element); fp32 outputs from exact inputs
// 1e-4 (only the order of the additions differs). Without a visible GPU every test warns
// "no GPU: skipped" and passes.
#ifdef TRAINSIM_HAVE_CUDA

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "kernels/cuda/moe.cuh"
#include "runtime/moe_routing.hpp"
#include "tests/gpu/device_test_support.hpp"

using namespace trainsim::gpu_test;  // DeviceArray, random_values, relative_error, the tolerances, SKIP_WITHOUT_GPU

namespace {

std::vector<int32_t> random_indices(size_t count, int32_t below, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, below - 1);
  std::vector<int32_t> v(count);
  for (int32_t& x : v) x = dist(rng);
  return v;
}

}  // namespace

TEST_CASE("CUDA moe_gather_rows matches loops, exact without a scale and to bf16 rounding with one, 8-wide and scalar rows", "[cuda_kernels][moe]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t cols : {64, 13}) {
    INFO("cols " << cols);
    const int64_t rows = 37, from = 29;
    const auto src = random_values(static_cast<size_t>(from * cols), 1);
    const auto index = random_indices(static_cast<size_t>(rows), static_cast<int32_t>(from), 2);
    const auto scale = random_values(static_cast<size_t>(rows), 3);
    DeviceArray<bf16> dsrc(to_bf16(src)), plain(static_cast<size_t>(rows * cols)), scaled(static_cast<size_t>(rows * cols));
    DeviceArray<int32_t> dindex(index);
    DeviceArray<float> dscale(scale);
    trainsim::cuda::moe_gather_rows(dsrc.get(), dindex.get(), nullptr, plain.get(), rows, cols, nullptr);
    trainsim::cuda::moe_gather_rows(dsrc.get(), dindex.get(), dscale.get(), scaled.get(), rows, cols, nullptr);
    std::vector<float> want_plain(static_cast<size_t>(rows * cols)), want_scaled(want_plain.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = src[static_cast<size_t>(index[static_cast<size_t>(r)] * cols + c)];
        want_plain[static_cast<size_t>(r * cols + c)] = v;
        want_scaled[static_cast<size_t>(r * cols + c)] = scale[static_cast<size_t>(r)] * v;
      }
    }
    CHECK(download_float(plain) == want_plain);
    CHECK(relative_error(download_float(scaled), want_scaled) < kBf16Tolerance);
  }
}

TEST_CASE("CUDA moe_combine_rows sums each token's copies with their router weights (or ones), as loops", "[cuda_kernels][moe]") {
  SKIP_WITHOUT_GPU();
  for (const int64_t cols : {64, 13}) {
    INFO("cols " << cols);
    const int64_t tokens = 23, k = 3, from = 50;
    const auto src = random_values(static_cast<size_t>(from * cols), 4);
    const auto index = random_indices(static_cast<size_t>(tokens * k), static_cast<int32_t>(from), 5);
    const auto weight = random_values(static_cast<size_t>(tokens * k), 6, 0.0f, 1.0f);
    DeviceArray<bf16> dsrc(to_bf16(src)), weighted(static_cast<size_t>(tokens * cols)), summed(static_cast<size_t>(tokens * cols));
    DeviceArray<int32_t> dindex(index);
    DeviceArray<float> dweight(weight);
    trainsim::cuda::moe_combine_rows(dsrc.get(), dindex.get(), dweight.get(), weighted.get(), tokens, k, cols, nullptr);
    trainsim::cuda::moe_combine_rows(dsrc.get(), dindex.get(), nullptr, summed.get(), tokens, k, cols, nullptr);
    std::vector<float> want_weighted(static_cast<size_t>(tokens * cols), 0.0f), want_summed(want_weighted.size(), 0.0f);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        const size_t slot = static_cast<size_t>(t * k + j);
        for (int64_t c = 0; c < cols; ++c) {
          const float v = src[static_cast<size_t>(index[slot] * cols + c)];
          want_weighted[static_cast<size_t>(t * cols + c)] += weight[slot] * v;
          want_summed[static_cast<size_t>(t * cols + c)] += v;
        }
      }
    }
    CHECK(relative_error(download_float(weighted), want_weighted) < kBf16Tolerance);
    CHECK(relative_error(download_float(summed), want_summed) < kBf16Tolerance);
  }
}

TEST_CASE("CUDA moe_weight_grads gives each copy's output row dotted with its token's gradient", "[cuda_kernels][moe]") {
  SKIP_WITHOUT_GPU();
  const int64_t tokens = 41, k = 2, cols = 96, from = 70;
  const auto dy = random_values(static_cast<size_t>(tokens * cols), 7);
  const auto src = random_values(static_cast<size_t>(from * cols), 8);
  const auto index = random_indices(static_cast<size_t>(tokens * k), static_cast<int32_t>(from), 9);
  DeviceArray<bf16> ddy(to_bf16(dy)), dsrc(to_bf16(src));
  DeviceArray<int32_t> dindex(index);
  DeviceArray<float> dweight(static_cast<size_t>(tokens * k));
  trainsim::cuda::moe_weight_grads(ddy.get(), dsrc.get(), dindex.get(), dweight.get(), tokens, k, cols, nullptr);
  std::vector<float> want(static_cast<size_t>(tokens * k), 0.0f);
  for (int64_t s = 0; s < tokens * k; ++s) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      sum += static_cast<double>(dy[static_cast<size_t>((s / k) * cols + c)]) * src[static_cast<size_t>(index[static_cast<size_t>(s)] * cols + c)];
    }
    want[static_cast<size_t>(s)] = static_cast<float>(sum);
  }
  CHECK(relative_error(dweight.download(), want) < kFp32Tolerance);
}

TEST_CASE("CUDA moe_router_backward matches runtime/moe_routing's route_top_k_backward for top 1 to 3", "[cuda_kernels][moe]") {
  SKIP_WITHOUT_GPU();
  const int64_t tokens = 31, experts = 8;
  for (const int64_t k : {1, 2, 3}) {
    INFO("top " << k);
    const auto logits = random_values(static_cast<size_t>(tokens * experts), 10);
    const trainsim::runtime::Routing routing = trainsim::runtime::route_top_k(Eigen::Map<const Matrix>(logits.data(), tokens, experts), k);
    const auto dweight = random_values(static_cast<size_t>(tokens * k), 11);
    const Matrix want = trainsim::runtime::route_top_k_backward(routing, Eigen::Map<const Matrix>(dweight.data(), tokens, k), experts);
    DeviceArray<float> dw(flat(routing.weight)), ddweight(dweight);
    DeviceArray<int32_t> dexpert(routing.expert);
    DeviceArray<bf16> dlogits(static_cast<size_t>(tokens * experts));
    trainsim::cuda::moe_router_backward(dw.get(), dexpert.get(), ddweight.get(), dlogits.get(), tokens, k, experts, nullptr);
    CHECK(relative_error(download_float(dlogits), want) < kBf16Tolerance);
  }
}

#endif  // TRAINSIM_HAVE_CUDA
