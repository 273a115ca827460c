// Pricing from a measured profile: exact at measured points, interpolated between, refused
// outside unless extrapolation is allowed (then listed), and predictions that follow the data.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/errors.hpp"
#include "common/profile_json.hpp"
#include "model/model_catalog.hpp"
#include "sim/profiled_cost_model.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {
const std::string kProfile = std::string(TRAINSIM_TEST_DATA) + "/profiles/synthetic-gpu.json";

Hardware h100(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = gpus;
  return hw;
}
}  // namespace

TEST_CASE("a profile written out reads back identically") {
  const HardwareProfile p = load_profile(kProfile);
  const HardwareProfile again = read_profile(nlohmann::json::parse(profile_to_json(p).dump()), "roundtrip");
  CHECK(profile_to_json(again).dump() == profile_to_json(p).dump());
}

TEST_CASE("GEMMs are priced exactly at measured points and in between by log interpolation") {
  const HardwareProfile p = load_profile(kProfile);
  const ProfiledCostModel cost(p, kProfile, h100(8), Precision::kBf16, false, EfficiencyConstants{});
  CHECK(cost.gemm_s(4096, 1024, 1024, 1) == Approx(2.0 * 4096 * 1024 * 1024 / 1e14 + 5e-6));
  const double lo = cost.gemm_s(4096, 1024, 1024, 1), hi = cost.gemm_s(16384, 1024, 1024, 1);
  const double mid = cost.gemm_s(8192, 1024, 1024, 1);
  CHECK(mid > lo);
  CHECK(mid < hi);
  CHECK(mid == Approx(std::sqrt(lo * hi)));  // halfway in log m: the geometric mean
  CHECK(cost.extrapolated().empty());
}

TEST_CASE("outside the measured range the profile refuses, naming the table and the range") {
  const HardwareProfile p = load_profile(kProfile);
  const ProfiledCostModel strict(p, kProfile, h100(8), Precision::kBf16, false, EfficiencyConstants{});
  CHECK_THROWS_WITH(strict.gemm_s(65536, 1024, 1024, 1), Catch::Contains("outside the measured grid (m 1024-16384"));
  CHECK_THROWS_WITH(strict.collective_s(CollectiveKind::kAllReduce, 1e6, GroupScope{16, 8, 2}),
                    Catch::Contains("no all-reduce table for 16 ranks on 2 node(s)"));
  CHECK_THROWS_AS(ProfiledCostModel(p, kProfile, h100(8), Precision::kFp16, false, EfficiencyConstants{}), InputError);
}

TEST_CASE("with extrapolation allowed, ops outside the range are priced and listed") {
  const HardwareProfile p = load_profile(kProfile);
  const ProfiledCostModel cost(p, kProfile, h100(8), Precision::kBf16, true, EfficiencyConstants{});
  const double at_edge = cost.gemm_s(16384, 1024, 1024, 1);
  CHECK(cost.gemm_s(65536, 1024, 1024, 1) == Approx(4 * at_edge));  // constant efficiency beyond the edge
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, 1e6, GroupScope{16, 8, 2}) > 0);
  CHECK(cost.extrapolated().size() == 2);
}

TEST_CASE("a prediction follows the profile: GEMMs twice as slow give a slower iteration") {
  HardwareProfile p = load_profile(kProfile);
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan plan;
  plan.dp = 8;
  plan.micro_batch = 2;
  plan.global_batch = 16;
  plan.attention = AttentionKernel::kUnfused;
  const ProfiledCostModel fast(p, kProfile, h100(8), Precision::kBf16, true, EfficiencyConstants{});
  const Prediction a = predict_iteration(m, plan, h100(8), fast);
  for (GemmPoint& g : p.gemm[0].points) g.timing.median_s *= 2;
  const ProfiledCostModel slow(p, kProfile, h100(8), Precision::kBf16, true, EfficiencyConstants{});
  const Prediction b = predict_iteration(m, plan, h100(8), slow);
  CHECK(b.breakdown.compute_s > 1.6 * a.breakdown.compute_s);  // GEMMs dominate; memory-bound parts are unchanged
  CHECK(b.breakdown.compute_s < 2.0 * a.breakdown.compute_s);
  CHECK(b.breakdown.dp_comm_exposed_s == Approx(a.breakdown.dp_comm_exposed_s).margin(1e-9 + 0.5 * a.breakdown.dp_comm_exposed_s));
}

TEST_CASE("a CPU profile describes its host: peak and bandwidth are the best measured") {
  HardwareProfile p = load_profile(kProfile);
  p.provenance.device_kind = "cpu";
  const GpuSpec host = device_from_cpu_profile(p);
  CHECK(host.name == "cpu");
  CHECK(host.peak_fp32_flops_per_s == Approx(2.0 * 16384 * 4096 * 4096 / (2.0 * 16384 * 4096 * 4096 / 1e14 + 5e-6)));
  CHECK(host.memory_bytes == 85899345920.0);
}

namespace {
// A partial profile as `calibrate trace` writes it: two measured bf16 shapes, nothing else.
HardwareProfile trace_profile() {
  HardwareProfile p;
  p.provenance.device_kind = "gpu";
  p.provenance.device = "NVIDIA H100 80GB HBM3";
  p.partial = true;
  Timing a, b;
  a.median_s = a.p10_s = a.p90_s = 40e-6;  // 8192x1024x1024: 429 TFLOP/s
  b.median_s = b.p10_s = b.p90_s = 80e-6;  // 8192x4096x1024: 859 TFLOP/s
  a.samples = b.samples = 3;
  p.gemm_shapes.push_back({"bf16", {{8192, 1024, 1024, "aten::mm", a}, {8192, 4096, 1024, "aten::addmm", b}}});
  return p;
}
}  // namespace

TEST_CASE("a measured-shapes table: exact where the shape was measured, else the nearest shape's FLOP rate, listed") {
  const HardwareProfile p = trace_profile();
  const ProfiledCostModel cost(p, "trace.json", h100(8), Precision::kBf16, false, EfficiencyConstants{});
  CHECK(cost.gemm_s(8192, 4096, 1024, 1) == Approx(80e-6));
  CHECK(cost.gemm_s(4096, 1024, 1024, 2) == Approx(40e-6));  // a batched GEMM is looked up as m x batch
  CHECK(cost.extrapolated().empty());
  // 8192x3072x1024 is nearer 8192x4096x1024 in log n (ln 4/3 < ln 3): its rate, 3/4 of its FLOPs.
  CHECK(cost.gemm_s(8192, 3072, 1024, 1) == Approx(60e-6));
  // 1024x1024x8192 (a weight gradient): nearest is 8192x1024x1024 (distance 2 ln 8 vs more).
  CHECK(cost.gemm_s(1024, 1024, 8192, 1) == Approx(40e-6));
  const auto listed = cost.extrapolated();
  REQUIRE(listed.size() == 2);
  CHECK(listed.begin()->find("GEMM bf16 1024x1024x8192 was not measured: priced at the FLOP rate of the nearest measured shape 8192x1024x1024") == 0);
}

TEST_CASE("a partial profile prices what it did not measure with the datasheet model and lists each category") {
  const HardwareProfile p = trace_profile();
  const ProfiledCostModel cost(p, "trace.json", h100(8), Precision::kBf16, false, EfficiencyConstants{});
  const DatasheetCostModel datasheet(h100(8), Precision::kBf16, EfficiencyConstants{});
  CHECK(cost.memory_bound_s(1e8) == Approx(datasheet.memory_bound_s(1e8)));
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, 1e6, GroupScope{8, 8, 1}) ==
        Approx(datasheet.collective_s(CollectiveKind::kAllReduce, 1e6, GroupScope{8, 8, 1})));
  CHECK(cost.optimizer_s(1e6) == Approx(datasheet.optimizer_s(1e6)));
  int memory = 0, collectives = 0, optimizer = 0;
  for (const std::string& e : cost.extrapolated()) {
    memory += e.rfind("memory-bound kernels: not measured", 0) == 0;
    collectives += e.rfind("collectives: not measured", 0) == 0;
    optimizer += e.rfind("optimizer: not measured", 0) == 0;
  }
  CHECK(memory == 1);
  CHECK(collectives == 1);
  CHECK(optimizer == 1);
  // Not partial: the same profile is refused where it lacks the copy table.
  HardwareProfile full = p;
  full.partial = false;
  CHECK_THROWS_WITH(ProfiledCostModel(full, "full.json", h100(8), Precision::kBf16, false, EfficiencyConstants{}),
                    Catch::Contains("no memory_bound table for kernel \"copy\""));
  // No table for the plan's dtype at all: refused, partial or not.
  CHECK_THROWS_AS(ProfiledCostModel(p, "trace.json", h100(8), Precision::kFp16, false, EfficiencyConstants{}), InputError);
}

TEST_CASE("a trace profile's measured shapes, partial flag and source files read back identically") {
  HardwareProfile p = trace_profile();
  p.provenance.traces.push_back({"rank0.json.gz", "a1828f8c857bf9ae", 444829});
  const HardwareProfile again = read_profile(nlohmann::json::parse(profile_to_json(p).dump()), "roundtrip");
  CHECK(again.partial);
  REQUIRE(again.gemm_shapes.size() == 1);
  CHECK(again.gemm_shapes[0].points.size() == 2);
  CHECK(again.gemm_shapes[0].points[1].op == "aten::addmm");
  REQUIRE(again.provenance.traces.size() == 1);
  CHECK(again.provenance.traces[0].fnv1a64 == "a1828f8c857bf9ae");
  CHECK(profile_to_json(again).dump() == profile_to_json(p).dump());
}

TEST_CASE("a partial profile's attention: its measured forward point exactly, the backward it lacks from the datasheet, listed") {
  HardwareProfile p = trace_profile();
  Timing t;
  t.median_s = t.p10_s = t.p90_s = 100e-6;
  t.samples = 24;
  p.attention.push_back({"bf16", "flash (profiler trace)", {{256, 559, 64, true, false, t}}});
  const ProfiledCostModel cost(p, "trace.json", h100(8), Precision::kBf16, false, EfficiencyConstants{});
  const DatasheetCostModel datasheet(h100(8), Precision::kBf16, EfficiencyConstants{});
  Op op;
  op.kind = OpKind::kAttention;
  op.attention_batch_heads = 256;
  op.attention_seq = 559;
  op.attention_head_dim = 64;
  CHECK(cost.attention_s(op) == Approx(100e-6));
  CHECK(cost.extrapolated().empty());
  op.backward = true;
  CHECK(cost.attention_s(op) == Approx(datasheet.attention_s(op)));  // not refused: the profile is partial
  REQUIRE(cost.extrapolated().size() == 1);
  CHECK(cost.extrapolated().begin()->find("backward is outside the measured attention table") != std::string::npos);
}
