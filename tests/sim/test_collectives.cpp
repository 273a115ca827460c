// The collectives table: nccl-tests' bus factors and names, ring and tree steps, NCCL's protocol
// choice inside a node, and the one datasheet formula both cost models price with (the profiled
// model falls back to it where a profile has no table).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "common/profile_json.hpp"
#include "common/units.hpp"
#include "sim/collectives.hpp"
#include "sim/cost_model.hpp"
#include "sim/profiled_cost_model.hpp"

using namespace trainsim;

namespace {

constexpr CollectiveKind kKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                                     CollectiveKind::kAllToAll, CollectiveKind::kSendRecv};

Hardware a100_nodes(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("a100-sxm-80gb");
  hw.gpus = gpus;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 200;
  return hw;
}

}  // namespace

TEST_CASE("bus-bandwidth factors follow nccl-tests PERFORMANCE.md") {
  CHECK(bus_factor(CollectiveKind::kAllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_factor(CollectiveKind::kAllGather, 8) == Approx(7.0 / 8));
  CHECK(bus_factor(CollectiveKind::kReduceScatter, 4) == Approx(3.0 / 4));
  CHECK(bus_factor(CollectiveKind::kAllToAll, 4) == Approx(3.0 / 4));
  CHECK(bus_factor(CollectiveKind::kSendRecv, 2) == 1.0);
}

TEST_CASE("every collective kind has one table entry: its name, ring steps and NCCL algorithms") {
  for (CollectiveKind kind : kKinds) CHECK(collective_spec(kind).kind == kind);
  CHECK(std::string(collective_name(CollectiveKind::kAllReduce)) == "all-reduce");
  CHECK(std::string(collective_name(CollectiveKind::kReduceScatter)) == "reduce-scatter");
  CHECK(std::string(collective_name(CollectiveKind::kSendRecv)) == "send-recv");
  CHECK(collective_spec(CollectiveKind::kAllReduce).ring_steps(8) == 14);
  CHECK(collective_spec(CollectiveKind::kAllGather).ring_steps(8) == 7);
  CHECK(collective_spec(CollectiveKind::kAllToAll).ring_steps(8) == 7);
  CHECK(collective_spec(CollectiveKind::kSendRecv).ring_steps(8) == 1);
  // NCCL rings (and picks a protocol for) all-reduce, all-gather and reduce-scatter; only the
  // all-reduce switches to a tree across nodes.
  for (CollectiveKind kind : kKinds) {
    const bool ring = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter;
    CHECK(collective_spec(kind).nccl_ring == ring);
    CHECK(collective_spec(kind).tree_across_nodes == (kind == CollectiveKind::kAllReduce));
  }
}

TEST_CASE("without an LL cap (the CPU host) LL runs at half the bus bandwidth, never slower than capped") {
  CHECK(nccl_intra_node_ring_s(CollectiveKind::kAllReduce, 65536, 8, 232e9, 0) <
        nccl_intra_node_ring_s(CollectiveKind::kAllReduce, 65536, 8, 232e9, 87.7e9));
}

TEST_CASE("the datasheet formula is the alpha-beta of docs/cost-model.md, bit for bit") {
  const Hardware hw = a100_nodes(64);
  const EfficiencyConstants c = default_efficiency_constants();
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  const double nvlink = hw.gpu.nvlink_bandwidth_bytes_per_s * c.nvlink_bandwidth_fraction;
  const double nic = gbit_per_s_to_bytes_per_s(hw.inter_node_gbps_per_gpu) * c.network_bandwidth_fraction;
  const double bytes = 3e8;
  // An all-reduce over 8 nodes, whole nodes: 8 NICs per node, a tree's 2 log2(64) steps.
  const GroupScope nodes{64, 8, 8};
  const double n = 64.0;
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, bytes, nodes) ==
        bytes * (2.0 * (n - 1.0) / n) / std::min(nvlink, 8.0 * nic) + 2.0 * std::ceil(std::log2(n)) * c.collective_step_inter_s +
            c.kernel_overhead_s);
  // An all-to-all over 2 nodes: each rank's share for the other node through its own NIC, at
  // the fraction of its line rate NCCL's all-to-all reaches.
  const GroupScope two{16, 8, 2};
  const double alltoall_nic = gbit_per_s_to_bytes_per_s(hw.inter_node_gbps_per_gpu) * c.alltoall_network_fraction;
  CHECK(cost.collective_s(CollectiveKind::kAllToAll, bytes, two) ==
        std::max(bytes * (16.0 - 8.0) / 16.0 / alltoall_nic, bytes * (8.0 - 1.0) / 16.0 / nvlink) + 15.0 * c.collective_step_inter_s +
            c.kernel_overhead_s);
  // A send/recv inside a node: one step, the whole buffer.
  const GroupScope pair{2, 2, 1};
  CHECK(cost.collective_s(CollectiveKind::kSendRecv, bytes, pair) == bytes * 1.0 / nvlink + 1.0 * c.collective_step_intra_s + c.kernel_overhead_s);
  // Inside an NVLink node a ring all-gather takes NCCL's protocol model at the GPU's LL cap.
  const GroupScope node{8, 8, 1};
  CHECK(cost.collective_s(CollectiveKind::kAllGather, bytes, node) ==
        nccl_intra_node_ring_s(CollectiveKind::kAllGather, bytes, 8, nvlink, 87.7e9) + c.kernel_overhead_s);
}

TEST_CASE("the profiled model prices a collective it has no table for by the same datasheet formula") {
  const HardwareProfile p = load_profile(std::string(TRAINSIM_TEST_DATA) + "/profiles/synthetic-gpu.json");
  Hardware hw = a100_nodes(16);
  hw.gpu = find_gpu("h100-sxm-80gb");
  const EfficiencyConstants c = default_efficiency_constants();
  const ProfiledCostModel profiled(p, "synthetic-gpu.json", hw, Precision::kBf16, true, c);
  const DatasheetCostModel datasheet(hw, Precision::kBf16, c);
  const GroupScope two_nodes{16, 8, 2};
  for (CollectiveKind kind : kKinds) {
    INFO(collective_name(kind));
    CHECK(profiled.collective_s(kind, 1e8, two_nodes) == datasheet.collective_s(kind, 1e8, two_nodes));
  }
}
