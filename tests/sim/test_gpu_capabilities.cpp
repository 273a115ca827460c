// GPUs as data: every catalog GPU carries its generation and the capabilities the cost model keys
// on (configs/hardware.json "capabilities"), they are read strictly (a generation or reference set
// trainsim has no records for is an InputError naming the key, the value and the known ones), and
// moving them from name rules into the catalog moved no prediction: the figures are the ones the
// name rules gave, and predictions are pinned at the values trainsim printed before the move.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/profile_json.hpp"
#include "common/units.hpp"
#include "model/model_catalog.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/hardware_json.hpp"
#include "sim/profiled_cost_model.hpp"
#include "sim/reference_efficiency.hpp"
#include "sim/simulator.hpp"

namespace trainsim {
extern const char* const kBuiltinHardwareJson;
}

using namespace trainsim;

namespace {

// The built-in catalog with one edit, parsed as a user's file would be.
template <typename Edit>
void parse_edited(Edit edit) {
  nlohmann::json doc = nlohmann::json::parse(kBuiltinHardwareJson);
  edit(doc);
  parse_hardware_catalog(doc.dump(), "edited.json");
}

// The InputError of parse_edited, or a failure when it parses.
template <typename Edit>
InputError refusal(Edit edit) {
  try {
    parse_edited(edit);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("the edited catalog was accepted");
  return InputError("unreachable");
}

}  // namespace

TEST_CASE("every catalog GPU's capabilities are read from configs/hardware.json") {
  const GpuCapabilities& a100 = find_gpu("a100-sxm-80gb").capabilities;
  CHECK(a100.generation == GpuGeneration::kAmpere);
  CHECK(a100.reference_family == ReferenceFamily::kA100);
  CHECK(a100.nvlink_generation == 3);
  CHECK(a100.nvlink_domain_gpus == 8);
  CHECK(a100.nccl_ll_max_bus_bytes_per_s == 87.7e9);
  CHECK(a100.cublas_workspace_bytes == 4.0 * 1024 * 1024);
  CHECK(a100.reference_node_nic_gbps_per_gpu == 200);
  CHECK_THAT(a100.source, Catch::Contains("tuning.cc") && Catch::Contains("#120925"));

  const GpuCapabilities& h200 = find_gpu("h200-sxm-141gb").capabilities;
  CHECK(h200.generation == GpuGeneration::kHopper);
  CHECK(h200.reference_family == ReferenceFamily::kH200);
  CHECK(h200.nvlink_generation == 4);
  CHECK(h200.nccl_ll_max_bus_bytes_per_s == 141e9);
  CHECK(h200.cublas_workspace_bytes == 32.0 * 1024 * 1024);
  CHECK(h200.reference_node_nic_gbps_per_gpu == 400);
  CHECK(find_gpu("h100-sxm-96gb-500w").capabilities.reference_family == ReferenceFamily::kH100);
}

TEST_CASE("the capabilities are the figures the name rules gave before they became data") {
  // The rules as they were: the name's prefix chose NCCL's LL cap (sim/nccl_protocols.cpp), the
  // cuBLAS workspace (sim/device_memory.cpp), a published run's NIC (sim/published_runs.cpp) and
  // the reference records (sim/reference_efficiency.cpp).
  for (const GpuSpec& g : builtin_gpus()) {
    INFO(g.name);
    const GpuGeneration generation = g.capabilities.generation;
    if (generation != GpuGeneration::kAmpere && generation != GpuGeneration::kHopper) continue;  // added as data, after the rules
    // The H800 (added after the rules) is an H100 die with slower NVLink: the H100's figures.
    const bool a100 = g.name.rfind("a100", 0) == 0, h200 = g.name.rfind("h200", 0) == 0;
    REQUIRE((a100 || h200 || g.name.rfind("h100", 0) == 0 || g.name.rfind("h800", 0) == 0));
    CHECK(g.capabilities.nccl_ll_max_bus_bytes_per_s == (a100 ? 87.7e9 : 141e9));
    CHECK(g.capabilities.cublas_workspace_bytes == (a100 ? 4.0 : 32.0) * 1024.0 * 1024.0);
    CHECK(g.capabilities.reference_node_nic_gbps_per_gpu == (a100 ? 200 : 400));
    CHECK(g.capabilities.reference_family == (a100 ? ReferenceFamily::kA100 : h200 ? ReferenceFamily::kH200 : ReferenceFamily::kH100));
    CHECK(g.capabilities.generation == (a100 ? GpuGeneration::kAmpere : GpuGeneration::kHopper));
  }
}

TEST_CASE("reference ratios come from the GPU's reference set, bit for bit as before") {
  const double a100_mamf = 271.2 / 312.0, a100_attention = 173.0 / 312.0;
  const double hopper_attention = 506.0 / 989.0;  // cuDNN fwd + bwd measured on an H200 (2026-11-28)
  const ReferenceEfficiency a100 = reference_efficiency(find_gpu("a100-sxm-40gb"), Precision::kBf16);
  CHECK(a100.gemm_ratio == 1.0);
  CHECK(a100.attention_ratio == 1.0);
  CHECK(a100.attention_curve == AttentionCurve::kA100Flash2);
  CHECK(a100.source == "A100 reference (the anchor: ratios 1)");

  const GpuSpec& h100 = find_gpu("h100-sxm-80gb");
  CHECK(reference_efficiency(h100, Precision::kBf16).gemm_ratio == 794.5 / 989.0 / a100_mamf);
  CHECK(reference_efficiency(h100, Precision::kFp8).gemm_ratio == 1402.6 / 1979.0 / a100_mamf);
  CHECK(reference_efficiency(h100, Precision::kFp32).gemm_ratio == 1.0);  // no TF32 record
  CHECK(reference_efficiency(h100, Precision::kBf16).attention_ratio == hopper_attention / a100_attention);
  CHECK(reference_efficiency(h100, Precision::kBf16, true).attention_ratio == 270.0 / 989.0 / a100_attention);
  CHECK(reference_efficiency(h100, Precision::kBf16).source == "H100 reference: MAMF BF16, cuDNN fused attention (measured on the H200)");
  CHECK(reference_efficiency(h100, Precision::kFp32, true).source ==
        "H100 reference: MAMF none for this precision, FlashAttention-2 (PyTorch SDPA)");

  const GpuSpec& h200 = find_gpu("h200-sxm-141gb");
  CHECK(reference_efficiency(h200, Precision::kBf16).gemm_ratio == 794.5 / 989.0 / a100_mamf);  // the H100's record
  CHECK(reference_efficiency(h200, Precision::kFp8).gemm_ratio == 1453.4 / 1979.0 / a100_mamf);
  CHECK(reference_efficiency(h200, Precision::kFp8).source == "H200 reference: MAMF FP8, cuDNN fused attention (measured on the H200)");
}

TEST_CASE("the CPU host has no generation and no reference set: ratios 1, no NCCL cap") {
  HardwareProfile p = load_profile(std::string(TRAINSIM_TEST_DATA) + "/profiles/synthetic-gpu.json");
  p.provenance.device_kind = "cpu";
  const GpuSpec host = device_from_cpu_profile(p);
  CHECK(host.capabilities.generation == GpuGeneration::kNone);
  CHECK(host.capabilities.reference_family == ReferenceFamily::kNone);
  CHECK(host.capabilities.nccl_ll_max_bus_bytes_per_s == 0);
  const ReferenceEfficiency r = reference_efficiency(host, Precision::kFp32);
  CHECK(r.gemm_ratio == 1.0);
  CHECK(r.attention_ratio == 1.0);
  CHECK(r.attention_curve == AttentionCurve::kNone);
  CHECK(r.source.empty());
}

TEST_CASE("a GPU of a generation trainsim has no records for is refused, naming the key, the value and the known ones") {
  const InputError e = refusal([](nlohmann::json& doc) { doc["gpus"][2]["capabilities"]["generation"] = "rubin"; });
  REQUIRE(e.problems().size() == 1);
  CHECK_THAT(e.problems()[0], Catch::Contains("edited.json: /gpus/2/capabilities/generation") &&
                                  Catch::Contains("\"rubin\" is not a GPU generation trainsim has data for") &&
                                  Catch::Contains("known: ampere, hopper, blackwell"));
  CHECK_THAT(e.hint(), Catch::Contains("sim/reference_efficiency.cpp") && Catch::Contains("never another GPU's"));
}

TEST_CASE("an unknown reference set, or one measured on another generation, is refused") {
  const InputError unknown = refusal([](nlohmann::json& doc) { doc["gpus"][0]["capabilities"]["reference_efficiency"] = "r100"; });
  REQUIRE(unknown.problems().size() == 1);
  CHECK_THAT(unknown.problems()[0], Catch::Contains("/gpus/0/capabilities/reference_efficiency") && Catch::Contains("\"r100\"") &&
                                        Catch::Contains("known: a100, h100, h200, b200, gb200, b300, gb300"));
  const InputError borrowed = refusal([](nlohmann::json& doc) { doc["gpus"][0]["capabilities"]["reference_efficiency"] = "h100"; });
  REQUIRE(borrowed.problems().size() == 1);
  CHECK_THAT(borrowed.problems()[0], Catch::Contains("h100 records were measured on hopper silicon, but generation is ampere"));
}

TEST_CASE("capabilities are read strictly: missing, misspelt and out-of-range keys are refused") {
  const InputError missing = refusal([](nlohmann::json& doc) { doc["gpus"][1].erase("capabilities"); });
  CHECK_THAT(missing.problems()[0], Catch::Contains("/gpus/1/capabilities") && Catch::Contains("missing required key"));
  const InputError misspelt = refusal([](nlohmann::json& doc) {
    auto& c = doc["gpus"][1]["capabilities"];
    c["cublas_workspace_mb"] = c["cublas_workspace_mib"];
    c.erase("cublas_workspace_mib");
  });
  REQUIRE(misspelt.problems().size() == 2);
  CHECK_THAT(misspelt.problems()[0], Catch::Contains("missing required key \"cublas_workspace_mib\""));
  CHECK_THAT(misspelt.problems()[1], Catch::Contains("unknown key \"cublas_workspace_mb\"") &&
                                         Catch::Contains("did you mean \"cublas_workspace_mib\""));
  const InputError negative = refusal([](nlohmann::json& doc) { doc["gpus"][1]["capabilities"]["nccl_ll_max_busbw_one_node_gb_per_s"] = -1; });
  CHECK_THAT(negative.problems()[0], Catch::Contains("nccl_ll_max_busbw_one_node_gb_per_s") && Catch::Contains("-1"));
  const InputError mesh = refusal([](nlohmann::json& doc) {
    auto& c = doc["gpus"][1]["capabilities"];
    c["scale_up_fabric"] = "full_mesh";
    c["nvlink_domain_gpus"] = 1;
  });
  CHECK_THAT(mesh.problems()[0], Catch::Contains("scale_up_fabric") && Catch::Contains("nvlink_domain_gpus >= 2"));
  const InputError version = refusal([](nlohmann::json& doc) { doc["schema_version"] = 1; });
  CHECK_THAT(version.problems()[0], Catch::Contains("/schema_version: 1 is not 2"));
}

TEST_CASE("a cluster preset may not put more GPUs in a node than its GPU's NVLink domain") {
  const InputError e = refusal([](nlohmann::json& doc) { doc["clusters"][0]["gpus_per_node"] = 16; });
  CHECK_THAT(e.problems()[0], Catch::Contains("cluster \"dgx-a100\": gpus_per_node (16) exceeds the NVLink domain of a100-sxm-80gb"));
}

TEST_CASE("the built-in catalog parses as a user's file would, and writes back key for key") {
  const HardwareCatalog catalog = parse_hardware_catalog(kBuiltinHardwareJson, "hardware.json");
  REQUIRE(catalog.gpus.size() == builtin_gpus().size());
  for (size_t i = 0; i < catalog.gpus.size(); ++i) {
    CHECK(gpu_catalog_entry_to_json(catalog.gpus[i]) == gpu_catalog_entry_to_json(builtin_gpus()[i]));
  }
}

TEST_CASE("predictions on every catalog GPU are the ones trainsim printed before GPUs became data") {
  // `trainsim predict --model llama3-8b --gpu G --gpus 16 --tp 2 --pp 2 --global-batch 64 --zero 1
  // --precision P --format json` before the change: iteration_time_s, memory_device_gib.
  struct Pinned {
    const char* gpu;
    Precision precision;
    double iteration_time_s, memory_device_gib;
  };
  const Pinned pinned[] = {
      // Re-pinned 2026-11-27 when each GEMM's fixed costs joined and the fractions were refitted
      // (docs/validation.md); the memory is unchanged. FP8 memory re-pinned 2026-11-28 when the
      // quantized saved inputs and Transformer Engine's cached FP8 weight copies joined (43.70 ->
      // 43.10 GiB: -4.1 GiB of activations, +3.5 GiB of weight copies). Hopper times re-pinned
      // 2026-11-28 when cuDNN's attention took its measured forward + backward (477 -> 506 TFLOP/s),
      // and again when its sequence curve became NVIDIA's cuDNN 9.19 forward + backward on an H200;
      // in the last digits (3e-15 s) when the forward and backward took their own rates (2026-11-29:
      // a forward and its backward keep their time, up to rounding).
      {"a100-sxm-40gb", Precision::kBf16, 10.62718242474744, 40.0},
      {"a100-sxm-80gb", Precision::kBf16, 10.355960136482095, 43.677559165954591},
      {"h100-sxm-80gb", Precision::kBf16, 3.8699669206691381, 43.704902915954591},
      {"h100-sxm-80gb", Precision::kFp8, 3.031794674076703, 43.100647056579589},
      {"h100-sxm-96gb-500w", Precision::kBf16, 4.3407303526312351, 43.704902915954591},
      {"h100-sxm-96gb-500w", Precision::kFp8, 3.4902723758133396, 43.100647056579589},
      {"h200-sxm-141gb", Precision::kBf16, 3.7097495533918119, 43.704902915954591},
      {"h200-sxm-141gb", Precision::kFp8, 2.7649405064124335, 43.100647056579589},
  };

  const ModelSpec model = resolve_model("llama3-8b");
  for (const Pinned& p : pinned) {
    INFO(p.gpu << " " << to_string(p.precision));
    Hardware hw;
    hw.gpu = find_gpu(p.gpu);
    hw.gpus = 16;
    hw.cluster = "custom";
    hw.usd_per_gpu_hour = hw.gpu.usd_per_gpu_hour;
    ParallelPlan plan;
    plan.dp = 4;
    plan.tp = 2;
    plan.pp = 2;
    plan.global_batch = 64;
    plan.zero_stage = 1;
    plan.precision = p.precision;
    plan.host_stack = HostStack::kPytorch;  // the pins predate the host stacks
    const DatasheetCostModel cost(hw, p.precision, default_efficiency_constants());
    const Prediction r = predict_iteration(model, plan, hw, cost);
    CHECK(r.iteration_time_s == p.iteration_time_s);
    CHECK(bytes_to_gib(r.device.memory.device_used_bytes) == p.memory_device_gib);
  }
}
