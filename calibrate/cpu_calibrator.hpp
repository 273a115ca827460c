// The CPU calibrator: the same profile format as the GPU one, so the calibrate -> predict -> run
// loop works on any machine. Measures fp32 GEMMs with Eigen (single-threaded, as each runtime rank
// runs), memory bandwidth (copy), and — when launched under `mpirun -np N` with N > 1 — MPI
// collectives across the ranks, and the checkpoint folder's write and read rates. Every rank takes part in every measurement (so ranks share the
// machine as they do in training); rank 0's timings are kept. Results are checked.
#pragma once

#include <functional>
#include <string>

#include "common/hardware_profile.hpp"

namespace trainsim {

struct CpuCalibrationOptions {
  bool quick = false;
  std::string storage_dir;  // where checkpoints go: its write / read rates are measured (empty: not measured)
  std::function<void(const std::string&)> progress;  // rank 0 only
};

// MPI must be initialised. Every rank returns the profile; only rank 0's is meant to be written.
HardwareProfile calibrate_cpu(const CpuCalibrationOptions& options);

}  // namespace trainsim
