// ZeRO-3 / FSDP's schedule in the simulator: each layer's all-gather issued when the layer before
// it starts (one layer of prefetch), each layer's reduce-scatter when its backward ends, checked
// against closed forms on a cost model where only GEMMs and collectives take time.
#include <catch2/catch.hpp>

#include <algorithm>

#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {

// GEMMs at 1 PFLOP/s (the LM head free); a collective over more than one rank moves its buffer at
// `bytes_per_s` after a fixed `latency_s`; everything else is free.
class GemmAndWireCost final : public CostModel {
 public:
  GemmAndWireCost(double latency_s, double bytes_per_s, int64_t vocab) : latency_s_(latency_s), bytes_per_s_(bytes_per_s), vocab_(vocab) {}
  double gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const override {
    if (n == vocab_ || k == vocab_ || m == vocab_) return 0.0;
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch) / 1e15;
  }
  double attention_s(const Op&) const override { return 0.0; }
  double memory_bound_s(double) const override { return 0.0; }
  double optimizer_s(double) const override { return 0.0; }
  double collective_s(CollectiveKind, double bytes, const GroupScope& scope) const override {
    return scope.size > 1 ? latency_s_ + bytes / bytes_per_s_ : 0.0;
  }
  std::string describe() const override { return "test"; }
  int64_t sm_count() const override { return 132; }

 private:
  double latency_s_, bytes_per_s_;
  int64_t vocab_;
};

Hardware node(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = gpus;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  return hw;
}

ParallelPlan fsdp_plan() {
  ParallelPlan p;
  p.dp = 2;
  p.zero_stage = 3;
  p.global_batch = 2;  // one micro-batch per rank
  return p;
}

// A GPT layer's forward GEMMs for one micro-batch at 1 PFLOP/s.
double layer_forward_s(const ModelSpec& m, const ParallelPlan& p) {
  const double tokens = static_cast<double>(p.micro_batch * m.seq_len);
  return 2.0 * tokens * 12.0 * m.hidden * m.hidden / 1e15;
}

}  // namespace

TEST_CASE("ZeRO-3 gathers one layer ahead: with a slow network the gathers run back to back and the compute waits on each") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  const ParallelPlan p = fsdp_plan();
  const double g = 1.0;  // every collective 1 s, far longer than a layer
  const GemmAndWireCost cost(g, 1e300, m.vocab);
  const double k = static_cast<double>(m.layers), c = layer_forward_s(m, p);
  const Prediction r = predict_iteration(m, p, node(2), cost);
  // The forward's k gathers, the backward's k (its first issued as the forward's last layer
  // starts), the last layer's backward, then the last layer's reduce-scatter. The whole-chunk
  // schedule (every gather ahead of compute) took 2 g + 3 k c.
  CHECK(r.iteration_time_s == Approx((2.0 * k + 1.0) * g + 2.0 * c).epsilon(1e-9));
  CHECK(r.breakdown.dp_comm_exposed_s == Approx(r.iteration_time_s - 3.0 * k * c).epsilon(1e-6));  // the rest is compute
}

TEST_CASE("ZeRO-3 with a fast network exposes only the first layer's gather and the last layer's reduce-scatter") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  const ParallelPlan p = fsdp_plan();
  const GemmAndWireCost cost(0.0, 1e12, m.vocab);  // 1 TB/s: a layer's gather (~0.2 ms) hides under its compute (~6 ms)
  const IterationWork work = lower_iteration(m, p);
  const double k = static_cast<double>(m.layers), c = layer_forward_s(m, p);
  const double params = work.stages[0].params;
  // nccl-tests' buffers: the gathered weights and the reduced gradients of one layer's share.
  const double gather = params / k * work.weight_bytes_per_param / 1e12;
  const double scatter = params / k * work.grad_bytes_per_param / 1e12;
  REQUIRE(gather < c);
  const Prediction r = predict_iteration(m, p, node(2), cost);
  CHECK(r.iteration_time_s == Approx(gather + 3.0 * k * c + scatter).epsilon(1e-9));
  CHECK(r.breakdown.dp_comm_exposed_s == Approx(gather + scatter).epsilon(1e-6));
}

TEST_CASE("ZeRO-3 issues no all-gather earlier than the start of the layer before the one that uses it") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p = fsdp_plan();
  p.global_batch = 8;  // four micro-batches per rank
  const GemmAndWireCost cost(1e-5, 1e11, m.vocab);
  SimulationOptions keep;
  keep.keep_trace = true;
  const Prediction r = predict_iteration(m, p, node(2), cost, keep);
  const auto& tasks = r.trace.graph.tasks();
  const auto& timing = r.trace.timing;
  int64_t gathers = 0;
  for (const Task& t : tasks) gathers += t.category == static_cast<int32_t>(TaskCategory::kDpGather) ? 1 : 0;
  CHECK(gathers == 2 * 2 * 4);  // per step the first layer's and the others'; forward and backward; 4 micro-batches
  // Each head gather (one layer) is issued after the compute task before it on the stage started.
  // The previous step's last compute task is its last layer.
  TaskId last_compute = -1;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].stream == 0) last_compute = static_cast<TaskId>(i);
    const bool head = tasks[i].category == static_cast<int32_t>(TaskCategory::kDpGather) && i + 1 < tasks.size() &&
                      tasks[i + 1].category == static_cast<int32_t>(TaskCategory::kDpGather);
    if (!head || last_compute < 0) continue;
    INFO("gather task " << i);
    CHECK(timing[i].start_s >= timing[static_cast<size_t>(last_compute)].start_s - 1e-12);
  }
}
