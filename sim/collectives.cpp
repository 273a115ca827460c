// The collectives table and the datasheet formula on it (sim/collectives.hpp).
#include "sim/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"

namespace trainsim {

namespace {

// Per kind (nccl-tests src/*.cu getBw; doc/PERFORMANCE.md): all-reduce moves 2(n-1)/n of its
// buffer per rank in 2(n-1) ring steps (reduce-scatter then all-gather); all-gather,
// reduce-scatter and all-to-all (n-1)/n in n-1 steps; a send/recv its buffer in one step.
// NCCL (src/graph/tuning.cc) runs all-reduce, all-gather and reduce-scatter as rings inside a
// node, and all-reduce as a tree across nodes.
constexpr CollectiveSpec kCollectives[] = {
    {CollectiveKind::kAllReduce, "all-reduce", [](double n) { return 2.0 * (n - 1.0) / n; },
     [](double n) { return 2.0 * (n - 1.0); }, true, true},
    {CollectiveKind::kAllGather, "all-gather", [](double n) { return (n - 1.0) / n; }, [](double n) { return n - 1.0; }, true,
     false},
    {CollectiveKind::kReduceScatter, "reduce-scatter", [](double n) { return (n - 1.0) / n; },
     [](double n) { return n - 1.0; }, true, false},
    {CollectiveKind::kAllToAll, "all-to-all", [](double n) { return (n - 1.0) / n; }, [](double n) { return n - 1.0; }, false,
     false},
    {CollectiveKind::kSendRecv, "send-recv", [](double) { return 1.0; }, [](double) { return 1.0; }, false, false},
};

// One NCCL protocol as its tuner prices it on a ring over NVLink.
struct Protocol {
  double base_s;      // baseLatencies[Ring][p]
  double step_s;      // hwLatencies[NVLINK][Ring][p]: per ring step
  double bandwidth;   // fraction of the Simple bus bandwidth the protocol reaches
};

// NVIDIA/nccl@5067397c src/graph/tuning.cc: Ring base latency LL 6.6, LL128 14.0, Simple 8.4 us;
// NVLink per-step latency LL 0.6, LL128 1.9, Simple 3.4 us; LL carries 8 bytes per 16-byte line
// (busBw x 0.5, capped at llMaxBw), LL128 120 of 128 (busBw x 0.92).
constexpr Protocol kLL{6.6e-6, 0.6e-6, 0.5};
constexpr Protocol kLL128{14.0e-6, 1.9e-6, 0.92};
constexpr Protocol kSimple{8.4e-6, 3.4e-6, 1.0};

}  // namespace

const CollectiveSpec& collective_spec(CollectiveKind kind) {
  for (const CollectiveSpec& spec : kCollectives) {
    if (spec.kind == kind) return spec;
  }
  fail_internal("collective_spec", __FILE__, __LINE__, "a collective kind without a table entry");
}

const char* collective_name(CollectiveKind kind) { return collective_spec(kind).name; }

double bus_factor(CollectiveKind kind, int64_t ranks) { return collective_spec(kind).bus_factor(static_cast<double>(ranks)); }

double nccl_intra_node_ring_s(CollectiveKind kind, double bytes, int64_t ranks, double bus_bytes_per_s,
                              double ll_max_bus_bytes_per_s) {
  const CollectiveSpec& spec = collective_spec(kind);
  const double steps = spec.ring_steps(static_cast<double>(ranks));
  const double bus_bytes = bytes * spec.bus_factor(static_cast<double>(ranks));
  double best = std::numeric_limits<double>::infinity();
  const Protocol protocols[] = {kLL, kLL128, kSimple};
  for (size_t i = 0; i < 3; ++i) {
    const Protocol& p = protocols[i];
    double bandwidth = bus_bytes_per_s * p.bandwidth;
    if (i == 0 && ll_max_bus_bytes_per_s > 0) bandwidth = std::min(bandwidth, ll_max_bus_bytes_per_s);
    best = std::min(best, p.base_s + steps * p.step_s + bus_bytes / bandwidth);
  }
  return best;
}

void set_nvls_links(CollectiveLinks& links, int64_t nvlink_generation, double nvlink_bytes_per_s) {
  if (nvlink_generation < 4 || nvlink_bytes_per_s <= 0) return;
  constexpr double kIntraBandwidthShare = 0.628;  // H100: 480 / (2 x 0.85 x 450); B200: 838 / (2 x 0.74 x 900)
  const bool blackwell = nvlink_generation >= 5;
  const double nvls_efficiency = blackwell ? 0.74 : 0.85;
  links.nvls_bus_bytes_per_s = 2.0 * nvls_efficiency * kIntraBandwidthShare * nvlink_bytes_per_s;
  links.nvls_min_ranks = blackwell ? 6 : 5;
}

double scale_up_bus_bytes_per_s(int64_t ranks_per_node, const CollectiveLinks& links) {
  if (links.mesh_links <= 0) return links.nvlink_bus_bytes_per_s;
  const double used = static_cast<double>(std::clamp<int64_t>(ranks_per_node - 1, 1, links.mesh_links));
  return links.nvlink_bus_bytes_per_s * used / static_cast<double>(links.mesh_links);
}

double collective_bus_bytes_per_s(const GroupScope& scope, const CollectiveLinks& links) {
  const double scale_up = scale_up_bus_bytes_per_s(scope.ranks_per_node, links);
  if (scope.intra_node()) return scale_up;
  // Across nodes each node's members drive their own NICs (rail-optimised fabric); the node's
  // traffic crosses ranks_per_node NICs, so busbw per rank = ranks_per_node x NIC bandwidth.
  return std::min(scale_up, static_cast<double>(scope.ranks_per_node) * links.nic_bytes_per_s);
}

double datasheet_collective_s(CollectiveKind kind, double bytes, const GroupScope& scope, const CollectiveLinks& links) {
  if (scope.size <= 1 || bytes <= 0) return 0.0;
  const CollectiveSpec& spec = collective_spec(kind);
  if (spec.nccl_ring && scope.intra_node() && links.nvlink) {
    // Inside an NVLink node NCCL picks LL, LL128 or Simple by its tuner model, and for an
    // all-reduce NVLS where the switch has it and it is faster (Simple only: 25 us, NCCL's
    // hwLatency for NVLS over NVLink, and its bus bandwidth).
    double ring = nccl_intra_node_ring_s(kind, bytes, scope.size, collective_bus_bytes_per_s(scope, links),
                                         links.nccl_ll_max_bus_bytes_per_s);
    if (kind == CollectiveKind::kAllReduce && links.nvls_bus_bytes_per_s > 0 && scope.size >= links.nvls_min_ranks) {
      constexpr double kNvlsLatencyS = 25e-6;
      ring = std::min(ring, kNvlsLatencyS + bytes * spec.bus_factor(static_cast<double>(scope.size)) / links.nvls_bus_bytes_per_s);
    }
    return ring + links.kernel_overhead_s;
  }
  const double n = static_cast<double>(scope.size);
  double bandwidth_s = bytes * bus_factor(kind, scope.size) / collective_bus_bytes_per_s(scope, links);
  if (kind == CollectiveKind::kAllToAll && !scope.intra_node()) {
    // An all-to-all is not a ring: every rank sends the share bound for other nodes, (n - r) / n
    // of its buffer, through its own NIC, and cannot use its node's other NICs (NCCL's maintainers,
    // nccl-tests #267 / #130: busbw = algbw (n - 1) / n, about 2 x one NIC on 2 nodes), at the
    // fraction of the line rate NCCL's all-to-all reaches (alltoall_nic_bytes_per_s); the share
    // staying in the node moves over NVLink at the same time.
    const double r = static_cast<double>(scope.ranks_per_node);
    const double nic = links.alltoall_nic_bytes_per_s > 0 ? links.alltoall_nic_bytes_per_s : links.nic_bytes_per_s;
    const double nvlink = scale_up_bus_bytes_per_s(scope.ranks_per_node, links);
    bandwidth_s = std::max(bytes * (n - r) / n / nic, nvlink > 0 ? bytes * (r - 1.0) / n / nvlink : 0.0);
  }
  const double alpha = scope.intra_node() ? links.step_intra_s : links.step_inter_s;
  double steps = spec.ring_steps(n);
  // NCCL switches to a tree across nodes for all-reduce: 2 log2(n) latency steps.
  if (spec.tree_across_nodes && !scope.intra_node()) steps = std::min(steps, 2.0 * std::ceil(std::log2(n)));
  return bandwidth_s + steps * alpha + links.kernel_overhead_s;
}

}  // namespace trainsim
