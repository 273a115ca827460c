// What `predict` expects each op category (common/op_category.hpp) to cost per iteration on one rank
// of each pipeline stage: the lowered ops priced one by one with the cost model, times the layers
// the stage holds and the micro-batches, recomputation in the backward column, the optimizer on
// the rank's (ZeRO-sharded) parameters. The counterpart of the runtime's per-op timing, for
// `compare`. predict_iteration prices them from the work it lowered, when asked
// (SimulationOptions::op_categories), so a search does not pay for them.
#pragma once

#include <vector>

#include "common/op_category.hpp"
#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/step_cost.hpp"

namespace trainsim {

// One entry per pipeline stage of `work`, the plan's lowered iteration; `scopes` as the plan's
// layers price their collectives (layer_scopes).
std::vector<OpCategoryTimes> price_op_categories(const IterationWork& work, const ParallelPlan& plan, const LayerScopes& scopes,
                                                 const CostModel& cost);

}  // namespace trainsim
