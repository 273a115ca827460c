// NCCL's tuner model for ring collectives inside a node (sim/nccl_protocols.hpp).
#include "sim/nccl_protocols.hpp"

#include <algorithm>
#include <limits>

#include "sim/cost_model.hpp"

namespace trainsim {

namespace {

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

double nccl_intra_node_ring_s(CollectiveKind kind, double bytes, int64_t ranks, double bus_bytes_per_s,
                              double ll_max_bus_bytes_per_s) {
  const double steps = kind == CollectiveKind::kAllReduce ? 2.0 * static_cast<double>(ranks - 1) : static_cast<double>(ranks - 1);
  const double bus_bytes = bytes * bus_factor(kind, ranks);
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

}  // namespace trainsim
