// The collectives, one table (nccl-tests' habit: one entry per collective kind): each kind's
// nccl-tests name and bus factor (busbw = algbw x factor, doc/PERFORMANCE.md), its ring's latency
// steps, whether NCCL runs it as a ring whose protocol (LL, LL128, Simple) its tuner picks inside a
// node, and whether NCCL switches to a tree across nodes. On it: the datasheet formula for one
// collective's seconds (NCCL's protocol model inside an NVLink node, alpha-beta otherwise), which
// DatasheetCostModel calls and ProfiledCostModel falls back to. Measured tables are not read here
// (sim/profiled_cost_model.cpp); docs/cost-model.md "Communication" derives each formula.
#pragma once

#include <cstdint>

#include "plan/lowering.hpp"
#include "plan/rank_grid.hpp"

namespace trainsim {

struct CollectiveSpec {
  CollectiveKind kind;
  const char* name;                 // "all-reduce": nccl-tests' name, a profile's collective table kind
  double (*bus_factor)(double n);   // busbw / algbw over n ranks
  double (*ring_steps)(double n);   // latency steps of one pass of the ring algorithm over n ranks
  bool nccl_ring;                   // inside an NVLink node NCCL runs a ring and picks LL / LL128 / Simple
  bool tree_across_nodes;           // across nodes NCCL runs a tree: 2 log2(n) latency steps
};

// The table's entry for `kind`.
const CollectiveSpec& collective_spec(CollectiveKind kind);
const char* collective_name(CollectiveKind kind);
// nccl-tests bus-bandwidth factor: busbw = algbw x factor (doc/PERFORMANCE.md).
double bus_factor(CollectiveKind kind, int64_t ranks);

// Seconds for a ring all-reduce, all-gather or reduce-scatter of `bytes` (nccl-tests S) over
// `ranks` GPUs of one node whose Simple-protocol bus bandwidth is `bus_bytes_per_s`, as NCCL's own
// tuner prices it (NVIDIA/nccl@5067397c src/graph/tuning.cc): the fastest protocol's base latency
// + steps x per-step latency + bytes x bus factor / its bandwidth. `ll_max_bus_bytes_per_s`: the
// GPU's LL cap (GpuCapabilities::nccl_ll_max_bus_bytes_per_s; 0: uncapped).
double nccl_intra_node_ring_s(CollectiveKind kind, double bytes, int64_t ranks, double bus_bytes_per_s,
                              double ll_max_bus_bytes_per_s);

// What the datasheet formula reads of the GPU, its links and the efficiency constants.
struct CollectiveLinks {
  bool nvlink = false;                    // the GPU has NVLink (its per-direction bandwidth > 0)
  double nvlink_bus_bytes_per_s = 0;      // NVLink per direction x nvlink_bandwidth_fraction
  double nic_bytes_per_s = 0;             // one NIC's line rate x network_bandwidth_fraction
  double alltoall_nic_bytes_per_s = 0;    // the same for NCCL's all-to-all (x alltoall_network_fraction; 0: nic_bytes_per_s)
  double nccl_ll_max_bus_bytes_per_s = 0;  // GpuCapabilities::nccl_ll_max_bus_bytes_per_s
  double step_intra_s = 0;                // alpha per step inside a node (not NVLink rings)
  double step_inter_s = 0;                // alpha per step across nodes
  double kernel_overhead_s = 0;           // launch and tail gap per kernel
  // NVLink SHARP (NVLS): the NVSwitch reduces and multicasts an all-reduce inside the NVLink
  // domain (Hopper and Blackwell). Its nccl-tests bus bandwidth (0: no NVLS) and the fewest ranks
  // NCCL runs it on (nvls_links below).
  double nvls_bus_bytes_per_s = 0;
  int64_t nvls_min_ranks = 0;
  // A full mesh of point-to-point links (AMD's xGMI; ScaleUpFabric::kFullMesh): the links each GPU
  // has, one per peer of its domain, over which nvlink_bus_bytes_per_s is spread; 0: a switch.
  int64_t mesh_links = 0;
};

// Scale-up bus bandwidth of `ranks_per_node` GPUs of one domain, bytes/s: the whole per-GPU
// bandwidth behind a switch; on a full mesh the share of the GPU's links that reach the group's
// other members, (ranks_per_node - 1) / mesh_links (RCCL's rings use every such link: rccl-tests
// all-reduce on 8 MI300X, 319 GB/s busbw = 7 x 45.6 GB/s; 2 GPUs of the same node, 47.7 GB/s).
double scale_up_bus_bytes_per_s(int64_t ranks_per_node, const CollectiveLinks& links);

// The NVLS links of a GPU: its generation's NCCL nvlsEfficiency (NVIDIA/nccl@5067397c
// src/graph/tuning.cc: Hopper 0.85, Blackwell 0.74) x 2 (an all-reduce's reduce and multicast
// halves pipelined) x 0.628 of its NVLink bandwidth per direction (the intra-node bandwidth that
// reproduces the measured 8-GPU NVLS busbw: H100 480 GB/s, B200 838; and a GB200 NVL72 rack's 72
// GPUs, 835 measured at 8 GiB against 836); NCCL's default picks NVLS from 5 GPUs on H200 and 6
// on B200 (ring below). Every figure: shared/reference microbench records (docs/cost-model.md
// "Communication"). No NVLS without an NVSwitch generation that has it (NVLink 4 and up).
void set_nvls_links(CollectiveLinks& links, int64_t nvlink_generation, double nvlink_bytes_per_s);

// Bus bandwidth of a group (nccl-tests convention), bytes/s: NVLink (or xGMI) inside a node; across
// nodes each node's members drive their own NICs (rail-optimised fabric), capped by the scale-up links.
double collective_bus_bytes_per_s(const GroupScope& scope, const CollectiveLinks& links);

// Seconds of one collective of `bytes` (the whole buffer S) over the group `scope`.
double datasheet_collective_s(CollectiveKind kind, double bytes, const GroupScope& scope, const CollectiveLinks& links);

}  // namespace trainsim
