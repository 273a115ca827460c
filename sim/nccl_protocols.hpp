// Collectives inside a node as NCCL's own tuner prices them: for each protocol (LL, LL128,
// Simple) a base latency, a latency per ring step over NVLink and a bus bandwidth, and NCCL runs
// the fastest. Small messages go over LL (low latency, half the bandwidth, capped per GPU
// generation: a catalog capability), medium ones over LL128, large ones over Simple. The constants are NCCL's tuning
// model (NVIDIA/nccl@5067397c src/graph/tuning.cc, shared/reference/microbench.json records of
// kind model_constant); docs/cost-model.md compares the result with measured nccl-tests curves.
#pragma once

#include "plan/lowering.hpp"

namespace trainsim {

// Seconds for a ring all-reduce, all-gather or reduce-scatter of `bytes` (nccl-tests S) over
// `ranks` GPUs of one node whose Simple-protocol bus bandwidth is `bus_bytes_per_s`: the fastest
// protocol's base latency + steps x per-step latency + bytes x bus factor / its bandwidth.
// `ll_max_bus_bytes_per_s`: the GPU's LL cap (GpuCapabilities::nccl_ll_max_bus_bytes_per_s, by
// generation; 0: uncapped).
double nccl_intra_node_ring_s(CollectiveKind kind, double bytes, int64_t ranks, double bus_bytes_per_s,
                              double ll_max_bus_bytes_per_s);

}  // namespace trainsim
