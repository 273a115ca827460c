// The built-in hardware catalog: every figure is present and in range, the datasheet numbers the
// simulator leans on come through the unit conversions exactly, unknown names suggest the nearest
// known one, every cluster names a GPU that exists, and the JSON written for reports carries the
// same keys and values as configs/hardware.json (tests/sim/test_gpu_capabilities.cpp: the
// capabilities the cost model keys on).
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/hardware_json.hpp"

namespace trainsim {
extern const char* const kBuiltinHardwareJson;
}

using namespace trainsim;

TEST_CASE("every built-in GPU has its figures, positive where they must be") {
  REQUIRE(builtin_gpus().size() >= 4);
  std::set<std::string> names;
  for (const auto& g : builtin_gpus()) {
    INFO(g.name);
    CHECK(names.insert(g.name).second);
    CHECK_FALSE(g.display_name.empty());
    CHECK(g.peak_bf16_flops_per_s > 0);
    CHECK(g.peak_fp16_flops_per_s > 0);
    CHECK(g.peak_tf32_flops_per_s > 0);
    CHECK(g.peak_fp32_flops_per_s > 0);
    CHECK(g.peak_fp8_flops_per_s >= 0);
    // Tensor cores beat the CUDA cores; TF32 runs at half the bf16 rate and fp8 (where present) at
    // twice it, up to the datasheets' rounding (2 x 989.4 vs 1978.9). CDNA 4 has no TF32: the
    // MI355X's fp32 GEMMs run on its FP32 matrix rate, the vector rate.
    const bool cdna4 = g.capabilities.generation == GpuGeneration::kCdna4;
    CHECK(g.peak_tf32_flops_per_s >= g.peak_fp32_flops_per_s);
    CHECK((cdna4 || g.peak_tf32_flops_per_s > g.peak_fp32_flops_per_s));
    CHECK(g.peak_fp16_flops_per_s == g.peak_bf16_flops_per_s);
    CHECK((cdna4 || g.peak_tf32_flops_per_s == Approx(g.peak_bf16_flops_per_s / 2).epsilon(1e-3)));
    CHECK((g.peak_fp8_flops_per_s == 0 ||
           g.peak_fp8_flops_per_s == Approx(2 * g.peak_bf16_flops_per_s).epsilon(1e-3)));
    CHECK(g.memory_bytes > 0);
    CHECK(g.memory_bandwidth_bytes_per_s > 0);
    CHECK(g.nvlink_bandwidth_bytes_per_s > 0);
    CHECK(g.sm_count > 0);
    CHECK(g.l2_bytes > 0);
    CHECK(g.power_w > 0);
    CHECK(g.usd_per_gpu_hour > 0);
    CHECK_FALSE(g.price_source.empty());
    CHECK((g.source.find("NVIDIA") != std::string::npos || g.source.find("AMD") != std::string::npos));
  }
  for (const char* name : {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb"}) {
    CHECK(names.contains(name));
  }
}

TEST_CASE("datasheet figures come through the unit conversions exactly") {
  const GpuSpec& h100 = find_gpu("h100-sxm-80gb");
  CHECK(h100.peak_bf16_flops_per_s == 989.4e12);
  CHECK(h100.peak_fp8_flops_per_s == 1978.9e12);
  CHECK(h100.memory_bandwidth_bytes_per_s == 3.35e12);
  CHECK(h100.nvlink_bandwidth_bytes_per_s == 450e9);
  CHECK(h100.memory_bytes == 81559.0 * 1024 * 1024);  // nvidia-smi: 81559 MiB
  CHECK(h100.l2_bytes == 50.0 * 1024 * 1024);

  const GpuSpec& a100 = find_gpu("a100-sxm-80gb");
  CHECK(a100.memory_bytes == gib_to_bytes(80));
  CHECK(bytes_to_gib(a100.memory_bytes) == 80.0);
  CHECK(a100.peak_bf16_flops_per_s == 312e12);
  CHECK(a100.peak_fp8_flops_per_s == 0);
  CHECK(find_gpu("a100-sxm-40gb").memory_bytes == gib_to_bytes(40));
  CHECK(find_gpu("h200-sxm-141gb").memory_bytes == 143771.0 * 1024 * 1024);
  CHECK(find_gpu("h200-sxm-141gb").memory_bandwidth_bytes_per_s == 4.8e12);
}

TEST_CASE("the H800 is the H100 SXM's compute with 400 GB/s NVLink, on DeepSeek's node preset") {
  // NVIDIA H800 datasheet (NVLink 400 GB/s bidirectional); the H800 trace's deviceProperties
  // (totalGlobalMem 84943110144 B = 81008 MiB, 132 SMs); DeepSeek-V3 report (arXiv 2412.19437):
  // 8 GPUs per node, one 400 Gb/s InfiniBand NIC per GPU, $2 per GPU-hour.
  const GpuSpec& h800 = find_gpu("h800-sxm-80gb");
  const GpuSpec& h100 = find_gpu("h100-sxm-80gb");
  CHECK(h800.peak_bf16_flops_per_s == h100.peak_bf16_flops_per_s);
  CHECK(h800.peak_fp8_flops_per_s == 1978.9e12);
  CHECK(h800.memory_bandwidth_bytes_per_s == 3.35e12);
  CHECK(h800.nvlink_bandwidth_bytes_per_s == 200e9);
  CHECK(h800.memory_bytes == 81008.0 * 1024 * 1024);
  CHECK(h800.sm_count == 132);
  CHECK(h800.usd_per_gpu_hour == 2.0);
  CHECK(h800.capabilities.reference_family == h100.capabilities.reference_family);
  const ClusterSpec& node = find_cluster("deepseek-h800");
  CHECK(node.gpu == "h800-sxm-80gb");
  CHECK(node.gpus_per_node == 8);
  CHECK(node.inter_node_gbps_per_gpu == 400);
}

TEST_CASE("the peak for a precision is that precision's tensor-core path, with no fp8 fallback") {
  const GpuSpec& h100 = find_gpu("h100-sxm-80gb");
  CHECK(h100.peak_flops_per_s(Precision::kBf16) == h100.peak_bf16_flops_per_s);
  CHECK(h100.peak_flops_per_s(Precision::kFp16) == h100.peak_fp16_flops_per_s);
  CHECK(h100.peak_flops_per_s(Precision::kFp32) == h100.peak_tf32_flops_per_s);
  CHECK(h100.peak_flops_per_s(Precision::kFp8) == 1978.9e12);
  CHECK(find_gpu("a100-sxm-80gb").peak_flops_per_s(Precision::kFp8) == 0);
}

TEST_CASE("an unknown GPU or cluster suggests the nearest name and lists the known ones") {
  CHECK_THROWS_WITH(find_gpu("h100-sxm-80g"), Catch::Contains("did you mean \"h100-sxm-80gb\""));
  CHECK_THROWS_AS(find_gpu("h100-sxm-80g"), InputError);
  try {
    find_gpu("tpu-v5");
    FAIL("find_gpu accepted an unknown name");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown GPU \"tpu-v5\""));
    CHECK_THAT(e.hint(), Catch::Contains("a100-sxm-40gb") && Catch::Contains("h200-sxm-141gb"));
  }
  CHECK_THROWS_WITH(find_cluster("dgx-h10"), Catch::Contains("did you mean \"dgx-h100\""));
  CHECK(find_cluster("dgx-h200").gpu == "h200-sxm-141gb");
}

TEST_CASE("every cluster names a GPU that exists") {
  REQUIRE(builtin_clusters().size() >= 4);
  for (const auto& c : builtin_clusters()) {
    INFO(c.name);
    CHECK_NOTHROW(find_gpu(c.gpu));
    CHECK(c.gpus_per_node >= 1);
    CHECK(c.inter_node_gbps_per_gpu > 0);
    CHECK_FALSE(c.source.empty());
  }
  CHECK(find_cluster("dgx-a100").inter_node_gbps_per_gpu == 200);
  CHECK(find_cluster("dgx-h100").inter_node_gbps_per_gpu == 400);
}

TEST_CASE("GPUs and clusters written as JSON match their catalog entries key for key") {
  const nlohmann::json doc = nlohmann::json::parse(kBuiltinHardwareJson);
  REQUIRE(doc["gpus"].size() == builtin_gpus().size());
  for (size_t i = 0; i < builtin_gpus().size(); ++i) {
    INFO(builtin_gpus()[i].name);
    CHECK(nlohmann::json(gpu_catalog_entry_to_json(builtin_gpus()[i])) == doc["gpus"][i]);
    // A prediction echoes the datasheet figures: the entry without its capabilities.
    nlohmann::json datasheet = doc["gpus"][i];
    datasheet.erase("capabilities");
    CHECK(nlohmann::json(gpu_to_json(builtin_gpus()[i])) == datasheet);
  }
  REQUIRE(doc["clusters"].size() == builtin_clusters().size());
  for (size_t i = 0; i < builtin_clusters().size(); ++i) {
    CHECK(nlohmann::json(cluster_to_json(builtin_clusters()[i])) == doc["clusters"][i]);
  }
}
