// AMD Instinct as data: the MI300X, MI325X and MI355X catalog entries carry the spec records'
// peaks and the CDNA capabilities; their GEMM efficiencies are the MAMF and MAF records of
// shared/reference (microbench-moe-blackwell-amd.json), the figures without an AMD record named as
// stand-ins; an 8-GPU Infinity Fabric board is a full mesh, where a group of g GPUs uses g - 1 of a
// GPU's 7 links, checked against the rccl-tests and torch all-reduce records.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "plan/rank_grid.hpp"
#include "sim/collectives.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/hardware_json.hpp"
#include "sim/reference_efficiency.hpp"

using namespace trainsim;

namespace {

constexpr double kA100Mamf = 271.2 / 312.0;

// All-reduce bus bandwidth (nccl-tests convention) of `ranks` GPUs of one board at `bytes`.
double allreduce_busbw(const char* gpu, int64_t ranks, double bytes) {
  Hardware hw;
  hw.gpu = find_gpu(gpu);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  GroupScope scope;
  scope.size = scope.ranks_per_node = ranks;
  return bytes * 2.0 * (ranks - 1) / ranks / cost.collective_s(CollectiveKind::kAllReduce, bytes, scope);
}

}  // namespace

TEST_CASE("the AMD Instinct GPUs carry the spec records' peaks and the CDNA capabilities") {
  struct Expected {
    const char* name;
    const char* cluster;
    double bf16_tflops, fp8_tflops, hbm_gb_per_s, xgmi_gb_per_s;
    int64_t cus;
    GpuGeneration generation;
    ReferenceFamily family;
  };
  const Expected expected[] = {
      {"mi300x-oam-192gb", "mi300x-8", 1307.4, 2614.9, 5300, 448, 304, GpuGeneration::kCdna3, ReferenceFamily::kMI300X},
      {"mi325x-oam-256gb", "mi325x-8", 1307.4, 2614.9, 6000, 448, 304, GpuGeneration::kCdna3, ReferenceFamily::kMI325X},
      {"mi355x-oam-288gb", "mi355x-8", 2516.6, 5033.2, 8000, 537.6, 256, GpuGeneration::kCdna4, ReferenceFamily::kMI355X}};
  for (const Expected& e : expected) {
    INFO(e.name);
    const GpuSpec& g = find_gpu(e.name);
    CHECK(g.peak_bf16_flops_per_s == Approx(e.bf16_tflops * 1e12));
    CHECK(g.peak_fp8_flops_per_s == Approx(e.fp8_tflops * 1e12));
    CHECK(g.peak_fp4_flops_per_s == 0);  // the MI355X's FP4 is MXFP4, not the NVFP4 trainsim prices
    CHECK(g.peak_flops_per_s(Precision::kMxfp8) == 0);
    CHECK(g.memory_bandwidth_bytes_per_s == e.hbm_gb_per_s * 1e9);
    CHECK(g.nvlink_bandwidth_bytes_per_s == Approx(e.xgmi_gb_per_s * 1e9));  // 7 xGMI links, one direction
    CHECK(g.sm_count == e.cus);
    CHECK(g.capabilities.generation == e.generation);
    CHECK(g.capabilities.reference_family == e.family);
    CHECK(g.capabilities.nvlink_generation == 0);  // xGMI: no NVLink SHARP
    CHECK(g.capabilities.nvlink_domain_gpus == 8);
    CHECK(g.capabilities.scale_up_fabric == ScaleUpFabric::kFullMesh);
    CHECK(g.capabilities.nccl_ll_max_bus_bytes_per_s == 0);
    CHECK(g.capabilities.cublas_workspace_bytes == 76.0 * 1024 * 1024);
    const ClusterSpec& cluster = find_cluster(e.cluster);
    CHECK(cluster.gpu == e.name);
    CHECK(cluster.gpus_per_node == 8);
    CHECK(cluster.inter_node_gbps_per_gpu == 400);
  }
  // rocm-smi's VRAM total on an MI300X: 205,822,885,888 bytes.
  CHECK(find_gpu("mi300x-oam-192gb").memory_bytes == 205822885888.0);
  for (const char* nvidia : {"a100-sxm-80gb", "h100-sxm-80gb", "b200-sxm-180gb", "gb200-nvl72"}) {
    CHECK(find_gpu(nvidia).capabilities.scale_up_fabric == ScaleUpFabric::kSwitch);
  }
}

TEST_CASE("AMD reference ratios are the MAMF records, FP8 the MAF at the BF16 MAMF / MAF ratio, attention a named stand-in") {
  const GpuSpec& mi300x = find_gpu("mi300x-oam-192gb");
  CHECK(reference_efficiency(mi300x, Precision::kBf16).gemm_ratio == Approx(668.4 / 1307.4 / kA100Mamf));
  CHECK(reference_efficiency(mi300x, Precision::kFp8).gemm_ratio == Approx(1273.0 * 668.4 / 708.0 / 2614.9 / kA100Mamf));
  CHECK(reference_efficiency(find_gpu("mi325x-oam-256gb"), Precision::kBf16).gemm_ratio == Approx(784.9 / 1307.4 / kA100Mamf));
  CHECK(reference_efficiency(find_gpu("mi325x-oam-256gb"), Precision::kFp8).gemm_ratio ==
        Approx(1519.0 * 784.9 / 843.0 / 2614.9 / kA100Mamf));
  const GpuSpec& mi355x = find_gpu("mi355x-oam-288gb");
  CHECK(reference_efficiency(mi355x, Precision::kBf16).gemm_ratio == Approx(1565.0 / 2516.6 / kA100Mamf));
  CHECK(reference_efficiency(mi355x, Precision::kFp8).gemm_ratio == Approx(3130.21 / 5033.2 / kA100Mamf));
  // Attention: the H100's cuDNN attention over its BF16 MAMF, times this GPU's BF16 MAMF.
  const ReferenceEfficiency h100 = reference_efficiency(find_gpu("h100-sxm-80gb"), Precision::kBf16);
  const ReferenceEfficiency amd = reference_efficiency(mi300x, Precision::kBf16);
  CHECK(amd.attention_ratio / amd.gemm_ratio == Approx(h100.attention_ratio / h100.gemm_ratio));
  CHECK(amd.attention_curve == h100.attention_curve);
  CHECK_THAT(amd.source, Catch::StartsWith("MI300X reference: MAMF BF16, fused attention at the H100's attention / GEMM ratio; "
                                           "datasheet extrapolation: ") &&
                             Catch::Contains("attention has no AMD record"));
}

TEST_CASE("an Infinity Fabric board is a full mesh: a group of g GPUs uses g - 1 of a GPU's 7 xGMI links") {
  CollectiveLinks links;
  links.nvlink = true;
  links.nvlink_bus_bytes_per_s = 700e9;
  links.mesh_links = 7;
  CHECK(scale_up_bus_bytes_per_s(8, links) == Approx(700e9));
  CHECK(scale_up_bus_bytes_per_s(4, links) == Approx(300e9));
  CHECK(scale_up_bus_bytes_per_s(2, links) == Approx(100e9));
  CHECK(scale_up_bus_bytes_per_s(1, links) == Approx(100e9));  // no peer: one link's worth, never 0
  links.mesh_links = 0;  // a switch: every group at the full bandwidth
  CHECK(scale_up_bus_bytes_per_s(2, links) == Approx(700e9));
  // Across nodes, 2 GPUs of each board: one xGMI link each against their two NICs.
  links.mesh_links = 7;
  links.nic_bytes_per_s = 48e9;
  GroupScope scope;
  scope.size = 8;
  scope.ranks_per_node = 2;
  scope.nodes = 4;
  CHECK(collective_bus_bytes_per_s(scope, links) == Approx(96e9));
  scope.ranks_per_node = 4;
  scope.nodes = 2;
  CHECK(collective_bus_bytes_per_s(scope, links) == Approx(192e9));
}

TEST_CASE("MI300X all-reduce against the rccl-tests and torch records: 8 GPUs on 7 links, 2 GPUs on one") {
  // shared/reference/microbench-moe-blackwell-amd.json: rccl-tests all_reduce on 8 MI300X, busbw
  // out of place 314.72 GB/s at 1 GiB and 318.98 at 16 GiB, 66.93 at 1 MiB, 197.26 at 16 MiB; torch
  // all_reduce_bench on 2 GPUs of a board 47.671 at 4 GiB. Datasheet xGMI x the NVLink-fitted
  // fraction, 448 x 232/300 = 346 GB/s, through NCCL's protocol model (RCCL is NCCL's fork):
  // predicted 346.2 / 342.7 / 214.8 / 62.0 / 49.5 GB/s, +8.5 / +8.9 / +8.9 / -7.4 / +3.8%.
  const double GiB = 1024.0 * 1024 * 1024, MiB = 1024.0 * 1024;
  CHECK(allreduce_busbw("mi300x-oam-192gb", 8, 16 * GiB) == Approx(318.98e9).epsilon(0.10));
  CHECK(allreduce_busbw("mi300x-oam-192gb", 8, 1 * GiB) == Approx(314.72e9).epsilon(0.10));
  CHECK(allreduce_busbw("mi300x-oam-192gb", 8, 16 * MiB) == Approx(197.26e9).epsilon(0.10));
  CHECK(allreduce_busbw("mi300x-oam-192gb", 8, 1 * MiB) == Approx(66.93e9).epsilon(0.10));
  CHECK(allreduce_busbw("mi300x-oam-192gb", 2, 4 * GiB) == Approx(47.671e9).epsilon(0.05));
  // Behind a switch the pair would get the whole bandwidth: 7x the mesh's.
  CHECK(allreduce_busbw("h100-sxm-80gb", 2, 4 * GiB) > 5 * allreduce_busbw("mi300x-oam-192gb", 2, 4 * GiB));
}

TEST_CASE("a full mesh has no NVLink SHARP, whatever its link generation says") {
  // An NVLink mesh (no NVSwitch) given NVLink 4 in a file: the all-reduce stays a ring.
  Hardware mesh, ring;
  mesh.gpu = find_gpu("mi300x-oam-192gb");
  mesh.gpu.capabilities.nvlink_generation = 4;
  ring.gpu = find_gpu("mi300x-oam-192gb");
  const DatasheetCostModel with_gen(mesh, Precision::kBf16, EfficiencyConstants{}), without(ring, Precision::kBf16, EfficiencyConstants{});
  const GroupScope board{8, 8, 1};
  CHECK(with_gen.collective_s(CollectiveKind::kAllReduce, 1e9, board) == without.collective_s(CollectiveKind::kAllReduce, 1e9, board));
}

TEST_CASE("TP 2 on an MI300X board pays one xGMI link, TP 8 the whole mesh") {
  Hardware hw;
  hw.gpu = find_gpu("mi300x-oam-192gb");
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  GroupScope tp2{2, 2, 1}, tp8{8, 8, 1};
  // An all-gather's bus traffic per rank is S (n - 1) / n: S / 2 on the pair, 7 S / 8 on the board.
  // The pair drives one link, the board seven: each bus byte takes 7x as long on the pair.
  const double s = 1e9;
  const double per_bus_byte_tp2 = cost.collective_s(CollectiveKind::kAllGather, s, tp2) / (s * 1.0 / 2.0);
  const double per_bus_byte_tp8 = cost.collective_s(CollectiveKind::kAllGather, s, tp8) / (s * 7.0 / 8.0);
  CHECK(per_bus_byte_tp2 / per_bus_byte_tp8 == Approx(7.0).epsilon(0.02));
}

TEST_CASE("an MI300X described in a file predicts as the catalog's, and scale_up_fabric is written back") {
  const nlohmann::ordered_json entry = gpu_catalog_entry_to_json(find_gpu("mi300x-oam-192gb"));
  CHECK(entry["capabilities"]["scale_up_fabric"] == "full_mesh");
  CHECK(!gpu_catalog_entry_to_json(find_gpu("h100-sxm-80gb"))["capabilities"].contains("scale_up_fabric"));
  const std::string path = "amd_catalog_test_mi300x.json";
  std::ofstream(path) << entry.dump(1);
  const GpuSpec file = load_gpu_file(path);
  std::remove(path.c_str());
  CHECK(file.capabilities.scale_up_fabric == ScaleUpFabric::kFullMesh);
  CHECK(file.memory_bytes == find_gpu("mi300x-oam-192gb").memory_bytes);
  Hardware a, b;
  a.gpu = find_gpu("mi300x-oam-192gb");
  b.gpu = file;
  const DatasheetCostModel ca(a, Precision::kFp8, EfficiencyConstants{}), cb(b, Precision::kFp8, EfficiencyConstants{});
  const GroupScope tp4{4, 4, 1};
  CHECK(cb.gemm_s(8192, 8192, 8192, 1) == ca.gemm_s(8192, 8192, 8192, 1));
  CHECK(cb.collective_s(CollectiveKind::kAllReduce, 1e8, tp4) == ca.collective_s(CollectiveKind::kAllReduce, 1e8, tp4));
}
