// How many data-parallel collective calls ZeRO-3 issues per transformer layer, as the plan's
// Zero3Collectives says: FSDP units wrap each block (one all-gather, one reduce-scatter per layer),
// or DeepSpeed's stage 3 fetches parameter modules in prefetch buckets and reduces gradients in
// reduce buckets. The bytes moved are the same either way; each call pays the ring's latency,
// which grows with the data-parallel size (sim/collectives.hpp), so at hundreds to thousands of
// ranks the number of calls sets how long the collectives take.
#pragma once

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

// DeepSpeed's default stage3_param_persistence_threshold, in elements (deepspeed/runtime/zero/
// config.py); the prefetch and reduce buckets are the plan's (ParallelPlan::deepspeed_*_bucket).
inline constexpr double kDeepSpeedPersistenceThreshold = 1e5;

struct Zero3Calls {
  double gathers_per_layer = 1;  // all-gather calls per layer per pass (forward, and backward)
  double reduces_per_layer = 1;  // reduce-scatter calls per layer per backward (may be < 1)
};

// Calls per layer of `plan` on `model` (1 and 1 unless zero3_collectives is deepspeed).
Zero3Calls zero3_calls(const ModelSpec& model, const ParallelPlan& plan);

}  // namespace trainsim
