// One iteration's time by phase: the one vocabulary predict, run, compare and the reports share,
// named as predict's JSON `breakdown` names it. A prediction (sim/simulator) fills it for the
// critical rank; a measured run (the runtimes) for each rank and iteration, and then also splits
// compute into its forward and backward passes (the measurement's `compute_split`).
#pragma once

namespace trainsim {

struct PhaseBreakdown {
  double compute_s = 0;          // GEMMs, attention, memory-bound kernels (recomputation included),
                                 // and the device idle while the host issues small ops
  double tp_comm_exposed_s = 0;  // TP / SP / CP collectives and (MoE) the EP all-to-alls, on the critical path
  double dp_comm_exposed_s = 0;  // DP / ZeRO collectives not hidden behind compute
  double pp_comm_exposed_s = 0;  // pipeline send/recv not hidden
  double bubble_s = 0;           // pipeline fill and drain, waiting on other stages
  double optimizer_s = 0;        // the optimizer step
  // Predictions only: of compute_s, the device idle while the host issues ops (the host is behind).
  double host_idle_s = 0;
  // Measured runs only (0 in a prediction): compute's forward and its backward passes (the
  // backward with recomputation). The runtimes add into these; close() sets compute_s.
  double forward_s = 0;
  double backward_s = 0;

  // A measured iteration of `iteration_s` wall seconds: compute_s = forward_s + backward_s, and the
  // bubble is what the wall time leaves after every other phase (never below 0).
  void close(double iteration_s) {
    compute_s = forward_s + backward_s;
    bubble_s = iteration_s - forward_s - backward_s - tp_comm_exposed_s - dp_comm_exposed_s - pp_comm_exposed_s - optimizer_s;
    if (bubble_s < 0) bubble_s = 0;
  }
};

}  // namespace trainsim
