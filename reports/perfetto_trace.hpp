// Chrome / Perfetto trace (the JSON "traceEvents" format) of one simulated iteration: one process
// per simulated rank (pipeline stage), one thread per stream, one complete event per task.
// Open it in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <iosfwd>

#include "sim/simulator.hpp"

namespace trainsim {

void write_perfetto_trace(std::ostream& out, const Prediction& prediction);

}  // namespace trainsim
