// Blackwell as data: the B200, GB200, B300 and GB300 catalog entries carry the spec records'
// peaks and the Blackwell capabilities; their reference efficiencies are the MAMF and attention
// records of shared/reference (microbench.json, microbench-moe-blackwell-amd.json), each named;
// the figures that are another GPU's ratio are named as datasheet extrapolations; an NVL72 rack is
// one NVLink domain of 72, its collectives priced on NVLink inside it and on the NIC beyond.
#include <catch2/catch.hpp>

#include "plan/rank_grid.hpp"
#include "sim/attention_shape.hpp"
#include "sim/collectives.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/reference_efficiency.hpp"

using namespace trainsim;

namespace {

constexpr double kA100Mamf = 271.2 / 312.0, kA100Attention = 173.0 / 312.0;
double fwd_bwd(double fwd, double bwd) { return 3.5 / (1.0 / fwd + 2.5 / bwd); }

}  // namespace

TEST_CASE("the Blackwell GPUs carry the spec records' peaks and the Blackwell capabilities") {
  struct Expected {
    const char* name;
    double bf16_tflops, fp8_tflops, hbm_gb_per_s;
    int64_t domain, nic_gbps;
    ReferenceFamily family;
  };
  const Expected expected[] = {{"b200-sxm-180gb", 2250, 4500, 7672, 8, 400, ReferenceFamily::kB200},
                               {"gb200-nvl72", 2500, 5000, 8000, 72, 400, ReferenceFamily::kGB200},
                               {"b300-sxm-288gb", 2250, 4500, 8000, 8, 800, ReferenceFamily::kB300},
                               {"gb300-nvl72", 2500, 5000, 8000, 72, 800, ReferenceFamily::kGB300}};
  for (const Expected& e : expected) {
    INFO(e.name);
    const GpuSpec& g = find_gpu(e.name);
    CHECK(g.peak_bf16_flops_per_s == e.bf16_tflops * 1e12);
    CHECK(g.peak_fp8_flops_per_s == e.fp8_tflops * 1e12);
    CHECK(g.memory_bandwidth_bytes_per_s == e.hbm_gb_per_s * 1e9);
    CHECK(g.nvlink_bandwidth_bytes_per_s == 900e9);  // NVLink 5: 1.8 TB/s bidirectional
    CHECK(g.capabilities.generation == GpuGeneration::kBlackwell);
    CHECK(g.capabilities.reference_family == e.family);
    CHECK(g.capabilities.nvlink_generation == 5);
    CHECK(g.capabilities.nvlink_domain_gpus == e.domain);
    CHECK(g.capabilities.nccl_ll_max_bus_bytes_per_s == 282e9);
    CHECK(g.capabilities.reference_node_nic_gbps_per_gpu == e.nic_gbps);
  }
  CHECK(find_gpu("b200-sxm-180gb").sm_count == 148);  // pytorch/ao PR #4002's device query
  CHECK(find_cluster("dgx-b200").gpus_per_node == 8);
  CHECK(find_cluster("gb200-nvl72").gpus_per_node == 72);
  CHECK(find_cluster("gb200-nvl72").inter_node_gbps_per_gpu == 400);
}

TEST_CASE("Blackwell reference ratios are the MAMF and cuDNN records over each GPU's own peak") {
  const GpuSpec& b200 = find_gpu("b200-sxm-180gb");
  CHECK(reference_efficiency(b200, Precision::kBf16).gemm_ratio == Approx(1745.0 / 2250 / kA100Mamf));
  CHECK(reference_efficiency(b200, Precision::kFp8).gemm_ratio == Approx(3432.5 / 4500 / kA100Mamf));
  // cuDNN 9.13.1's B200 record carried to 9.19 by the GB300's own move between the two releases.
  CHECK(reference_efficiency(b200, Precision::kBf16).attention_ratio ==
        Approx(fwd_bwd(1141.14 * 1672 / 1445.205, 832.907 * 1195 / 941.941) / 2250 / kA100Attention));
  CHECK(reference_efficiency(b200, Precision::kBf16, true).attention_ratio ==
        Approx(fwd_bwd(342.99, 273.484) / 2250 / kA100Attention));
  const GpuSpec& gb200 = find_gpu("gb200-nvl72");
  CHECK(reference_efficiency(gb200, Precision::kBf16).gemm_ratio == Approx(1822.0 / 2500 / kA100Mamf));
  CHECK(reference_efficiency(gb200, Precision::kFp8).gemm_ratio == Approx(3615.6 / 5000 / kA100Mamf));
  CHECK(reference_efficiency(gb200, Precision::kBf16).attention_ratio == Approx(fwd_bwd(1335, 1132) / 2500 / kA100Attention));
  CHECK(reference_efficiency(find_gpu("b300-sxm-288gb"), Precision::kFp8).gemm_ratio == Approx(3353.3 / 4500 / kA100Mamf));
  CHECK(reference_efficiency(find_gpu("gb300-nvl72"), Precision::kBf16).attention_ratio ==
        Approx(fwd_bwd(1672, 1195) / 2500 / kA100Attention));
  CHECK(reference_efficiency(b200, Precision::kBf16).attention_curve == AttentionCurve::kBlackwellCudnn);
  CHECK(reference_efficiency(b200, Precision::kBf16, true).attention_curve == AttentionCurve::kBlackwellFlash2);
}

TEST_CASE("the B200 and the GB200 differ in attention by their hardware, not by the cuDNN each was timed with") {
  // The same die: at one cuDNN release their attention rates stand as their MAMF does (1745 / 1822
  // = 0.958). With each part's newest record (B200 cuDNN 9.13.1, GB200 9.22.0) it was 0.745.
  const GpuSpec& b200 = find_gpu("b200-sxm-180gb");
  const GpuSpec& gb200 = find_gpu("gb200-nvl72");
  const auto tflops = [](const GpuSpec& g, bool attention) {
    const ReferenceEfficiency r = reference_efficiency(g, Precision::kBf16);
    return (attention ? r.attention_ratio : r.gemm_ratio) * g.peak_bf16_flops_per_s;
  };
  const double attention = tflops(b200, true) / tflops(gb200, true);
  const double gemm = tflops(b200, false) / tflops(gb200, false);
  CHECK(gemm == Approx(1745.0 / 1822.0));
  CHECK(attention == Approx(gemm).epsilon(0.02));  // 0.947 against 0.958
}

TEST_CASE("a Blackwell prediction names the figures that are datasheet extrapolations") {
  const std::string b200 = reference_efficiency(find_gpu("b200-sxm-180gb"), Precision::kFp8).source;
  CHECK(b200 == "B200 reference: MAMF FP8, cuDNN fused attention");  // every figure measured on a B200
  const std::string gb300 = reference_efficiency(find_gpu("gb300-nvl72"), Precision::kBf16).source;
  CHECK_THAT(gb300, Catch::StartsWith("GB300 reference: MAMF BF16, cuDNN fused attention; datasheet extrapolation: ") &&
                        Catch::Contains("no GB300 MAMF record: BF16 and FP8 MAMF are the GB200's ratios"));
  const std::string b300 = reference_efficiency(find_gpu("b300-sxm-288gb"), Precision::kBf16).source;
  CHECK_THAT(b300, Catch::Contains("datasheet extrapolation: no B300 BF16 MAMF or attention record"));
  Hardware hw;
  hw.gpu = find_gpu("gb300-nvl72");
  CHECK_THAT(DatasheetCostModel(hw, Precision::kBf16, EfficiencyConstants{}).describe(), Catch::Contains("datasheet extrapolation"));
}

TEST_CASE("the Blackwell attention curves are the B200's fwd+bwd TFLOP/s over the 4k figure") {
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 128, 4096) == Approx(1.0));
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 128, 8192) ==
        Approx(fwd_bwd(1384.231, 994.85) / fwd_bwd(1141.14, 832.907)).epsilon(1e-3));
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 256, 512) ==
        Approx(fwd_bwd(244.143, 200.594) / fwd_bwd(1141.14, 832.907)).epsilon(1e-3));  // wider than 128: the 128 row
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellCudnn, 64, 512) ==
        Approx(979.5 / 1428 * fwd_bwd(244.143, 200.594) / fwd_bwd(1141.14, 832.907)).epsilon(1e-3));  // head dim 64: x 0.686
  CHECK(attention_shape_factor(AttentionCurve::kBlackwellFlash2, 128, 131072) == Approx(357.9 / 290.3));  // clamped at 16k
}

TEST_CASE("an NVL72 rack is one NVLink domain: 72-GPU groups on NVLink, the NIC beyond the rack") {
  Hardware hw;
  hw.gpu = find_gpu("gb200-nvl72");
  hw.gpus_per_node = find_cluster("gb200-nvl72").gpus_per_node;
  hw.inter_node_gbps_per_gpu = find_cluster("gb200-nvl72").inter_node_gbps_per_gpu;
  const EfficiencyConstants c;
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  GroupScope rack;
  rack.size = 72;
  rack.ranks_per_node = 72;
  // Inside the rack: NVLink 5 x the nccl-tests fraction (900 x 232/300 = 696 GB/s; the CoreWeave
  // NVL72 all-reduce with NVLS off reaches ~835 GB/s at 4-8 GiB, microbench-moe-blackwell-amd.json).
  CHECK(cost.bus_bandwidth_bytes_per_s(rack) == Approx(900e9 * c.nvlink_bandwidth_fraction));
  // One GPU per rack across 4 racks (a DP group): its own 400 Gb/s NIC.
  GroupScope across;
  across.size = 4;
  across.ranks_per_node = 1;
  across.nodes = 4;
  CHECK(cost.bus_bandwidth_bytes_per_s(across) == Approx(50e9 * c.network_bandwidth_fraction));
  // The same 72-GPU group on 8-GPU nodes crosses 9 nodes: slower than inside the rack.
  GroupScope nodes = rack;
  nodes.ranks_per_node = 8;
  nodes.nodes = 9;
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, 1e9, nodes) > cost.collective_s(CollectiveKind::kAllReduce, 1e9, rack));
}

TEST_CASE("NVLink all-reduce against the nccl-tests records: NCCL's ring below 5 (Hopper) / 6 (Blackwell) GPUs, NVLS from there") {
  // busbw = S x 2(n-1)/n / t at 8 GiB (shared/reference/microbench.json, stas00/ml-engineering@744d01e
  // network/README.md, NCCL's default choice per GPU count): 8 x B200-SXM NVLS 838.0 GB/s, 4 of them
  // Ring 673.2; 8 x H200 NVLS 473.1, 4 Ring 363.3; 8 x H100 NVLS 480 (nccl-tests #212). One GB200
  // NVL72 rack, 72 GPUs: 834.57 GB/s out of place (microbench-moe-blackwell-amd.json,
  // coreweave/nccl-tests@cb86553 README.md; NVLS off is implied there, not stated): the NVLS model
  // gives 836, the ring 682 (-18%). docs/cost-model.md "Communication".
  const double bytes = 8.0 * 1024 * 1024 * 1024;
  const auto busbw = [&](const char* gpu, int64_t ranks) {
    Hardware hw;
    hw.gpu = find_gpu(gpu);
    hw.gpus_per_node = ranks;
    const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
    GroupScope scope;
    scope.size = scope.ranks_per_node = ranks;
    return bytes * 2.0 * (ranks - 1) / ranks / cost.collective_s(CollectiveKind::kAllReduce, bytes, scope);
  };
  CHECK(busbw("b200-sxm-180gb", 8) == Approx(838.0e9).epsilon(0.02));
  CHECK(busbw("b200-sxm-180gb", 4) == Approx(673.2e9).epsilon(0.05));
  CHECK(busbw("gb200-nvl72", 72) == Approx(834.57e9).epsilon(0.02));
  CHECK(busbw("h100-sxm-80gb", 8) == Approx(480e9).epsilon(0.02));
  CHECK(busbw("h200-sxm-141gb", 8) == Approx(473.1e9).epsilon(0.03));
  CHECK(busbw("h200-sxm-141gb", 4) == Approx(363.3e9).epsilon(0.05));
  CHECK(busbw("a100-sxm-80gb", 8) < 300e9 * 0.8);  // no NVLS before NVLink 4: the ring at 232 / 300
}

TEST_CASE("MXFP8 and NVFP4: Blackwell's block-scaled tensor cores, priced from Transformer Engine's kernels") {
  const GpuSpec& b200 = find_gpu("b200-sxm-180gb");
  const GpuSpec& gb200 = find_gpu("gb200-nvl72");
  // Dense FP4 peaks of the spec records; MXFP8 runs at the FP8 peak; neither exists before Blackwell.
  CHECK(b200.peak_flops_per_s(Precision::kNvfp4) == 9000e12);
  CHECK(gb200.peak_flops_per_s(Precision::kNvfp4) == 10000e12);
  CHECK(find_gpu("b300-sxm-288gb").peak_flops_per_s(Precision::kNvfp4) == 15000e12);
  CHECK(b200.peak_flops_per_s(Precision::kMxfp8) == b200.peak_fp8_flops_per_s);
  for (const char* hopper : {"h100-sxm-80gb", "h200-sxm-141gb"}) {
    CHECK(find_gpu(hopper).peak_flops_per_s(Precision::kMxfp8) == 0);
    CHECK(find_gpu(hopper).peak_flops_per_s(Precision::kNvfp4) == 0);
  }
  // MXFP8 GEMMs at 6.812 / 7.161 of the per-tensor FP8 ones, NVFP4 at 6.812 / 3.764 (B300, TE).
  for (const GpuSpec* g : {&b200, &gb200}) {
    const double fp8 = g->peak_fp8_flops_per_s * reference_efficiency(*g, Precision::kFp8).gemm_ratio;
    CHECK(g->peak_fp8_flops_per_s * reference_efficiency(*g, Precision::kMxfp8).gemm_ratio == Approx(fp8 * 6.812 / 7.161));
    CHECK(g->peak_fp4_flops_per_s * reference_efficiency(*g, Precision::kNvfp4).gemm_ratio == Approx(fp8 * 6.812 / 3.764));
  }
  CHECK(reference_efficiency(b200, Precision::kNvfp4).source == "B200 reference: MAMF FP8 x 1.81 (NVFP4 kernels, B300), cuDNN fused attention");
  // Attention stays BF16 under every quantized recipe.
  Hardware hw;
  hw.gpu = b200;
  const DatasheetCostModel bf16(hw, Precision::kBf16, EfficiencyConstants{}), nvfp4(hw, Precision::kNvfp4, EfficiencyConstants{});
  Op attention;
  attention.kind = OpKind::kAttention;
  attention.attention_batch_heads = 32;
  attention.attention_seq = 4096;
  attention.attention_head_dim = 128;
  CHECK(nvfp4.attention_s(attention) == Approx(bf16.attention_s(attention)));
  CHECK(nvfp4.gemm_s(8192, 8192, 8192, 1) < DatasheetCostModel(hw, Precision::kMxfp8, EfficiencyConstants{}).gemm_s(8192, 8192, 8192, 1));
}

TEST_CASE("FP8 GEMMs on Blackwell take every layout: the transposed copies Hopper needs are not made") {
  Op transpose;
  transpose.kind = OpKind::kMemoryBound;
  transpose.bytes = 3e9;
  transpose.tn_layout_bytes = 1e9;
  Hardware hopper, blackwell;
  hopper.gpu = find_gpu("h100-sxm-80gb");
  blackwell.gpu = find_gpu("b200-sxm-180gb");
  const DatasheetCostModel h100(hopper, Precision::kFp8, EfficiencyConstants{}), b200(blackwell, Precision::kFp8, EfficiencyConstants{});
  const GroupScope none{1, 1, 1};
  CHECK(!h100.fp8_gemm_any_layout());
  CHECK(b200.fp8_gemm_any_layout());
  CHECK(h100.op_s(transpose, none) == Approx(h100.memory_bound_s(3e9)));
  CHECK(b200.op_s(transpose, none) == Approx(b200.memory_bound_s(2e9)));
  transpose.tn_layout_bytes = transpose.bytes;  // a transpose alone: not run at all
  CHECK(b200.op_s(transpose, none) == 0.0);
}

TEST_CASE("FP8 blockwise GEMMs: 1.222x the per-tensor ones on Hopper (TE on H200), MXFP8's on Blackwell") {
  Op gemm;
  gemm.kind = OpKind::kGemm;
  gemm.m = gemm.n = gemm.k = 8192;
  Op block = gemm;
  block.fp8_block_scaled = true;
  const GroupScope none{1, 1, 1};
  for (const auto& [gpu, slowdown] : {std::pair{"h100-sxm-80gb", (22.882 - 3.5 * (2.0 + 2.0 * (1.0 + 4.0 / 128.0)) / 6.0) / 16.785},
                                      std::pair{"b200-sxm-180gb", 7.161 / 6.812}}) {
    Hardware hw;
    hw.gpu = find_gpu(gpu);
    const DatasheetCostModel cost(hw, Precision::kFp8, EfficiencyConstants{});
    CHECK(cost.op_s(block, none) == Approx(cost.op_s(gemm, none) * slowdown));
  }
  CHECK((22.882 - 3.5 * (2.0 + 2.0 * (1.0 + 4.0 / 128.0)) / 6.0) / 16.785 == Approx(1.222).epsilon(0.001));
}
