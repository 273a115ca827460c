// What `predict` expects each op category (common/op_category.hpp) to cost per iteration on one rank
// of each pipeline stage: the lowered ops priced one by one with the cost model, times the layers
// the stage holds and the micro-batches, recomputation in the backward column, the optimizer on
// the rank's (ZeRO-sharded) parameters. The counterpart of the runtime's per-op timing, for
// `compare`. Priced separately from predict_iteration so a search does not pay for it.
#pragma once

#include <vector>

#include "model/model_spec.hpp"
#include "common/op_category.hpp"
#include "plan/parallel_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

// One entry per pipeline stage. The plan must be valid for the model.
std::vector<OpCategoryTimes> predict_op_categories(const ModelSpec& model, const ParallelPlan& plan, const Hardware& hardware,
                                                   const CostModel& cost);

}  // namespace trainsim
