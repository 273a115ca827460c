// Chrome / Perfetto trace (the JSON "traceEvents" format) of one simulated iteration. One process
// per rank class (a pipeline stage: its TP, CP and DP ranks run the same timeline), or with
// `all_ranks` one per rank; threads per stream: compute, the exposed TP, CP and EP collectives,
// DP reduce, DP gather, PP sends each way. Each transformer layer is a slice where the schedule
// puts it (args: op, layer, micro-batch, FLOPs, bytes); a pipeline send is joined to the step that
// receives it by a flow. Open it in ui.perfetto.dev or chrome://tracing. docs/simulator.md.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "sim/simulator.hpp"

namespace trainsim {

struct PerfettoOptions {
  bool all_ranks = false;  // `--trace-ranks all`: every rank, not one per rank class
};

// `--trace-ranks all` draws each rank class once per rank: refused above this many trace events
// (about 200 bytes each in the file: ~1 GB) or ranks, where the file stops being one the Perfetto
// UI opens (it loads a JSON trace into the browser's memory).
inline constexpr int64_t kTraceEventLimit = 5'000'000;
inline constexpr int64_t kTraceRankLimit = 4096;

// Throws InputError (naming --trace-ranks) when `all_ranks` exceeds the limits above.
void write_perfetto_trace(std::ostream& out, const Prediction& prediction, const PerfettoOptions& options = {});

}  // namespace trainsim
