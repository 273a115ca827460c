// CPU activation offloading (plan cpu_offload_layers): (layers - N) layers' activations stay on the
// GPU, and each offloaded layer's copies over the host link show where longer than a layer's pass.
#include <catch2/catch.hpp>

#include "common/errors.hpp"
#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/rank_memory.hpp"
#include "sim/cost_model.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {

ParallelPlan offload_plan(int64_t layers) {
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 16;
  p.zero_stage = 1;
  p.cpu_offload_layers = layers;
  return p;
}

Hardware h100_node() {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.inter_node_gbps_per_gpu = 400;
  hw.gpus = 8;
  hw.gpus_per_node = 8;
  return hw;
}

}  // namespace

TEST_CASE("CPU offloading keeps (layers - N) layers' activations on the GPU") {
  const ModelSpec m = resolve_model("llama3-8b");  // 32 layers
  const StageMemory none = estimate_rank_memory(m, offload_plan(0)).peak();
  const StageMemory half = estimate_rank_memory(m, offload_plan(16)).peak();
  // The layers' stored activations halve; the embedding's, the head's and the working memory stay.
  CHECK(none.memory.activations_bytes - half.memory.activations_bytes == Approx(16.0 * half.offloaded_layer_bytes));
  CHECK(half.offloaded_layer_bytes * 32.0 < none.memory.activations_bytes);
  CHECK(half.offloaded_layer_bytes * 32.0 > 0.8 * none.memory.activations_bytes);
  CHECK(half.memory.weights_bytes == none.memory.weights_bytes);
  ParallelPlan pipelined = offload_plan(4);
  pipelined.pp = 2;
  pipelined.dp = 4;
  CHECK_FALSE(validate_plan(pipelined, m, "plan").empty());  // Megatron-Core refuses PP with offloading
  ParallelPlan recomputed = offload_plan(4);
  recomputed.recompute = Recompute::kFull;
  CHECK_FALSE(validate_plan(recomputed, m, "plan").empty());
  CHECK_FALSE(validate_plan(offload_plan(32), m, "plan").empty());  // fewer than the layers
}

TEST_CASE("CPU offloading's copies over the host link show only where longer than a layer's pass, and need the link's figure") {
  const ModelSpec m = resolve_model("llama3-8b");
  Hardware hw = h100_node();
  REQUIRE(hw.gpu.capabilities.host_link_bytes_per_s == Approx(55.2e9));  // PCIe Gen5, measured on H200
  const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
  const Prediction none = predict_iteration(m, offload_plan(0), hw, cost);
  const Prediction half = predict_iteration(m, offload_plan(16), hw, cost);
  CHECK(half.iteration_time_s >= none.iteration_time_s);
  // A slow link: every offloaded layer's copies dominate its passes.
  hw.gpu.capabilities.host_link_bytes_per_s = 1e9;
  const DatasheetCostModel slow_cost(hw, Precision::kBf16, default_efficiency_constants());
  const Prediction slow = predict_iteration(m, offload_plan(16), hw, slow_cost);
  const double copy_s = estimate_rank_memory(m, offload_plan(16)).peak().offloaded_layer_bytes / 1e9;
  CHECK(slow.iteration_time_s > none.iteration_time_s + 16.0 * copy_s);  // two micro-batches, each way: more than one copy per layer
  hw.gpu.capabilities.host_link_bytes_per_s = 0;  // a user's GPU that states no link
  const DatasheetCostModel unknown(hw, Precision::kBf16, default_efficiency_constants());
  CHECK_THROWS_AS(predict_iteration(m, offload_plan(16), hw, unknown), InputError);
}
