// The iteration simulator against closed forms: pure pipeline (m + p - 1) stage times, the
// interleaved bubble divided by v, a pure data-parallel ring all-reduce, and a breakdown that
// always sums to the iteration time.
#include <catch2/catch.hpp>

#include <cstring>

#include "model/model_catalog.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {

// Every GEMM costs its FLOPs at 1 PFLOP/s; the LM head, memory-bound kernels, attention and
// collectives are free, so every stage does the same work and closed forms are exact.
class GemmOnlyCost final : public CostModel {
 public:
  explicit GemmOnlyCost(double collective_s = 0) : collective_s_(collective_s) {}
  double gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const override {
    if (n == vocab_ || k == vocab_ || m == vocab_) return 0.0;  // the LM head
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch) / 1e15;
  }
  double attention_s(const Op&) const override { return 0.0; }
  double memory_bound_s(double) const override { return 0.0; }
  double collective_s(CollectiveKind, double, const GroupScope& scope) const override {
    return scope.size > 1 ? collective_s_ : 0.0;
  }
  std::string describe() const override { return "test"; }
  int64_t sm_count() const override { return 132; }
  int64_t vocab_ = 0;

 private:
  double collective_s_;
};

Hardware cluster(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = gpus;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  return hw;
}

double sum(const PhaseBreakdown& b) {
  return b.compute_s + b.tp_comm_exposed_s + b.dp_comm_exposed_s + b.pp_comm_exposed_s + b.bubble_s + b.optimizer_s;
}

// Forward + backward time of one micro-batch on one stage under GemmOnlyCost (LM head excluded).
double stage_time(const ModelSpec& m, const ParallelPlan& p) {
  const double tokens = static_cast<double>(p.micro_batch * m.seq_len);
  const double layer_gemm_flops = 2.0 * tokens * 12.0 * m.hidden * m.hidden;  // GPT layer, forward
  return 3.0 * layer_gemm_flops * static_cast<double>(m.layers / p.pp) / 1e15;
}

}  // namespace

TEST_CASE("a pure pipeline takes (m + p - 1) stage times with 1F1B and GPipe") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  GemmOnlyCost cost;
  cost.vocab_ = m.vocab;
  for (Schedule schedule : {Schedule::k1F1B, Schedule::kGpipe}) {
    for (int64_t pp : {2, 4, 8}) {
      ParallelPlan p;
      p.pp = pp;
      p.schedule = schedule;
      p.global_batch = 12;
      const Prediction r = predict_iteration(m, p, cluster(pp), cost);
      INFO("pp " << pp);
      CHECK(r.iteration_time_s == Approx((12 + pp - 1) * stage_time(m, p)).epsilon(1e-9));
      CHECK(r.breakdown.bubble_s == Approx((pp - 1) * stage_time(m, p)).epsilon(1e-9));
      CHECK(sum(r.breakdown) == Approx(r.iteration_time_s).epsilon(1e-12));
    }
  }
}

// GPT-3 1.3B (24 layers; F = B = W = a third of a stage time under GemmOnlyCost) on 4 stages, 16
// micro-batches: stage time t, and its 1F1B and ZB-1p predictions, for the Zero Bubble cases.
struct ZeroBubbleCase {
  ModelSpec m = resolve_model("gpt3-1.3b");
  GemmOnlyCost cost;
  ParallelPlan p;
  double t = 0;
  Prediction one_f_one_b, zb1;
  ZeroBubbleCase() {
    cost.vocab_ = m.vocab;
    p.pp = 4;
    p.global_batch = 16;
    t = stage_time(m, p);
    one_f_one_b = predict_iteration(m, p, cluster(4), cost);
    p.schedule = Schedule::kZeroBubble1p;
    zb1 = predict_iteration(m, p, cluster(4), cost);
  }
};

TEST_CASE("Zero Bubble schedules: ZB-1p within ZB-H1's bubble (p - 1)(F + B - W), ZB-2p without a bubble") {
  ZeroBubbleCase c;
  const ModelSpec& m = c.m;
  ParallelPlan& p = c.p;
  const double t = c.t;
  const Prediction &one_f_one_b = c.one_f_one_b, &zb1 = c.zb1;
  const GemmOnlyCost& cost = c.cost;
  p.schedule = Schedule::kZeroBubble2p;
  const Prediction zb2 = predict_iteration(m, p, cluster(4), cost);
  CHECK(one_f_one_b.iteration_time_s == Approx(19 * t).epsilon(1e-9));
  CHECK(zb1.iteration_time_s <= (16 + 3.0 / 3.0) * t * (1 + 1e-9));
  CHECK(zb2.iteration_time_s == Approx(16 * t).epsilon(1e-9));
  for (const Prediction* r : {&zb1, &zb2}) CHECK(sum(r->breakdown) == Approx(r->iteration_time_s).epsilon(1e-12));
  // ZB-1p keeps the first stage's 1F1B activations on every stage, ZB-2p twice as many micro-batches.
  const auto activations = [](const Prediction& r, size_t stage) { return r.memory.stages[stage].memory.activations_bytes; };
  CHECK(activations(zb1, 0) == Approx(activations(one_f_one_b, 0)));
  CHECK(activations(zb1, 3) > activations(one_f_one_b, 3));
  CHECK(activations(zb2, 0) > 1.5 * activations(one_f_one_b, 0));
}

TEST_CASE("ZB-V: two chunks per rank in a V, close to no bubble at 1F1B's memory, the head on the first rank") {
  ZeroBubbleCase c;  // 24 layers: 8 chunks of 3
  const ModelSpec& m = c.m;
  ParallelPlan& p = c.p;
  const double t = c.t;
  const Prediction &one_f_one_b = c.one_f_one_b, &zb1 = c.zb1;
  const GemmOnlyCost& cost = c.cost;
  p.schedule = Schedule::kZeroBubbleV;
  p.vpp = 2;
  REQUIRE(validate_plan(p, m, "test").empty());
  SimulationOptions keep;
  keep.keep_trace = true;
  const Prediction zbv = predict_iteration(m, p, cluster(4), cost, keep);
  INFO("ZB-V " << zbv.iteration_time_s / t << " stage times, ZB-1p " << zb1.iteration_time_s / t);
  CHECK(zbv.iteration_time_s >= 16 * t * (1 - 1e-9));
  CHECK(zbv.iteration_time_s < zb1.iteration_time_s);
  CHECK(zbv.iteration_time_s <= 16 * t * 1.05);  // the authors' zero bubble at F = B = W, within 5%
  CHECK(sum(zbv.breakdown) == Approx(zbv.iteration_time_s).epsilon(1e-12));
  // Each micro-batch crosses the ranks twice, except at the turn of the V (rank 3 keeps it): 2(p - 1)
  // sends forward and as many backward.
  int64_t sends = 0;
  for (const auto& task : zbv.trace.graph.tasks()) {
    sends += task.category == static_cast<int32_t>(TaskCategory::kSendForward) || task.category == static_cast<int32_t>(TaskCategory::kSendBackward);
  }
  CHECK(sends == 2 * 2 * (4 - 1) * 16);
  // Every rank keeps 1F1B's first-stage activations (p micro-batches of a stage); the first rank
  // holds the embedding and the LM head, the last neither.
  const auto& mem = [](const Prediction& r, size_t stage) { return r.memory.stages[stage]; };
  CHECK(mem(zbv, 1).memory.activations_bytes == Approx(mem(zb1, 1).memory.activations_bytes));
  // GPT-3 ties the embedding and the head: one matrix on the first rank, no copy on the last.
  CHECK(mem(zbv, 0).params == mem(one_f_one_b, 0).params + mem(one_f_one_b, 3).params - mem(one_f_one_b, 1).params - m.vocab * m.hidden);
  CHECK(mem(zbv, 3).params == mem(one_f_one_b, 1).params);
}

TEST_CASE("interleaving v chunks divides the pipeline bubble by v") {
  const ModelSpec m = resolve_model("gpt3-1.3b");  // 24 layers
  GemmOnlyCost cost;
  cost.vocab_ = m.vocab;
  for (int64_t v : {2, 3}) {
    ParallelPlan p;
    p.pp = 4;
    p.vpp = v;
    p.schedule = Schedule::kInterleaved;
    p.global_batch = 16;
    const Prediction r = predict_iteration(m, p, cluster(4), cost);
    const double t = stage_time(m, p);
    CHECK(r.iteration_time_s == Approx(16 * t + 3 * t / static_cast<double>(v)).epsilon(1e-9));
  }
}

TEST_CASE("pure data parallelism without overlap adds one ring all-reduce of the gradients") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const Hardware hw = cluster(8);
  EfficiencyConstants c;
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  p.dp_overlap = false;
  const Prediction r = predict_iteration(m, p, hw, cost);
  ParallelPlan single = p;
  single.dp = 1;
  single.global_batch = 1;
  const Prediction alone = predict_iteration(m, single, cluster(1), cost);
  const double params = static_cast<double>(r.memory.peak().params);
  const double allreduce = cost.collective_s(CollectiveKind::kAllReduce, params * 4.0, GroupScope{8, 8, 1});
  CHECK(r.breakdown.dp_comm_exposed_s == Approx(allreduce).epsilon(1e-9));
  CHECK(r.iteration_time_s == Approx(alone.iteration_time_s + allreduce).epsilon(1e-9));
  CHECK(sum(r.breakdown) == Approx(r.iteration_time_s).epsilon(1e-12));
}

TEST_CASE("context-parallel ranks reduce their gradients together even with dp 1 (the dp x cp group)") {
  const ModelSpec m = resolve_model("llama3-8b");
  const Hardware hw = cluster(8);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  ParallelPlan p;
  p.cp = 8;
  p.global_batch = 1;
  p.dp_overlap = false;
  const Prediction r = predict_iteration(m, p, hw, cost);
  const double params = static_cast<double>(r.memory.peak().params);
  CHECK(r.breakdown.dp_comm_exposed_s == Approx(cost.collective_s(CollectiveKind::kAllReduce, params * 4.0, GroupScope{8, 8, 1})).epsilon(1e-9));
}

TEST_CASE("overlapping the DP reduction with the backward hides part of it") {
  const ModelSpec m = resolve_model("gpt3-6.7b");
  const Hardware hw = cluster(64);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  ParallelPlan p;
  p.dp = 8;
  p.tp = 8;
  p.global_batch = 16;
  p.dp_overlap = false;
  const Prediction serial = predict_iteration(m, p, hw, cost);
  p.dp_overlap = true;
  const Prediction overlapped = predict_iteration(m, p, hw, cost);
  CHECK(overlapped.breakdown.dp_comm_exposed_s < serial.breakdown.dp_comm_exposed_s);
  CHECK(overlapped.iteration_time_s < serial.iteration_time_s);
  CHECK(sum(overlapped.breakdown) == Approx(overlapped.iteration_time_s).epsilon(1e-12));
}

TEST_CASE("pipeline transfers appear as exposed PP communication, never as compute") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  GemmOnlyCost cost(1e-3);
  cost.vocab_ = m.vocab;
  ParallelPlan p;
  p.pp = 4;
  p.global_batch = 8;
  const Prediction r = predict_iteration(m, p, cluster(4), cost);
  CHECK(r.breakdown.pp_comm_exposed_s > 0);
  CHECK(r.breakdown.compute_s == Approx(8 * stage_time(m, p)).epsilon(1e-9));
  CHECK(sum(r.breakdown) == Approx(r.iteration_time_s).epsilon(1e-12));
}

TEST_CASE("the 1T model on 3072 GPUs simulates one pipeline of 64 stages and 512 micro-batches") {
  const ModelSpec m = resolve_model("megatron-1t");
  ParallelPlan p;
  p.dp = 6;
  p.tp = 8;
  p.pp = 64;
  p.global_batch = 3072;
  p.recompute = Recompute::kFull;
  const Hardware hw = cluster(3072);
  const DatasheetCostModel cost(hw, Precision::kBf16, EfficiencyConstants{});
  const Prediction r = predict_iteration(m, p, hw, cost);
  CHECK(r.iteration_time_s > 0);
  CHECK(r.mfu > 0.2);
  CHECK(r.mfu < 0.8);
  CHECK(sum(r.breakdown) == Approx(r.iteration_time_s).epsilon(1e-9));
}

namespace {
// FSDP over 2 ranks beside a 2-stage pipeline, 8 micro-batches, at ZeRO `stage`.
ParallelPlan fsdp_with_pipeline(int stage) {
  ParallelPlan p;
  p.dp = 2;
  p.pp = 2;
  p.zero_stage = stage;
  p.global_batch = 16;
  return p;
}
}  // namespace

TEST_CASE("FSDP with a pipeline gathers each chunk's weights once and reduce-scatters its gradients once") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  GemmOnlyCost cost(1e-3);  // every collective 1 ms
  cost.vocab_ = m.vocab;
  ParallelPlan p = fsdp_with_pipeline(3);
  SimulationOptions keep;
  keep.keep_trace = true;
  const Prediction r = predict_iteration(m, p, cluster(4), cost, keep);
  // Per layer (the first layer's task, then the others'), for the first micro-batch only; the
  // reduce-scatters (after the first layer's backward, then the last's) for the last only.
  int64_t gathers = 0, reductions = 0;
  for (const auto& task : r.trace.graph.tasks()) {
    if (task.stream / r.trace.streams_per_stage != 0) continue;  // stage 0
    if (task.category == static_cast<int32_t>(TaskCategory::kDpGather)) {
      ++gathers;
      CHECK(task.label == 0);
    }
    if (task.category == static_cast<int32_t>(TaskCategory::kDpReduce)) {
      ++reductions;
      CHECK(task.label == p.micro_batches() - 1);
    }
  }
  CHECK(gathers == 2);
  CHECK(reductions == 2);
  // Memory: the gathered 16-bit weights and the unsharded gradients, accumulated in fp32 (FSDP2's
  // reduce dtype), stay; states are sharded.
  const StageMemory& s = r.memory.stages[0];
  const double n = static_cast<double>(s.params);
  CHECK(s.memory.weights_bytes == Approx(2.0 * n));
  CHECK(s.memory.other_bytes == Approx(4.0 * n));
  CHECK(s.memory.optimizer_bytes == Approx(12.0 * n / 2.0));
}

TEST_CASE("ZeRO-2 with a pipeline (FSDP not resharded after forward, Llama 3's layout) runs as ZeRO-3 with one") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  GemmOnlyCost cost(1e-3);
  cost.vocab_ = m.vocab;
  ParallelPlan p = fsdp_with_pipeline(2);
  REQUIRE(validate_plan(p, m, "test").empty());  // refused before: "ZeRO-2 with pipeline parallelism is not supported"
  const Prediction two = predict_iteration(m, p, cluster(4), cost);
  p.zero_stage = 3;
  const Prediction three = predict_iteration(m, p, cluster(4), cost);
  CHECK(two.iteration_time_s == Approx(three.iteration_time_s).epsilon(1e-12));
  CHECK(two.memory.stages[0].memory.total_bytes() == Approx(three.memory.stages[0].memory.total_bytes()));
}

TEST_CASE("DeepSpeed's ZeRO-3 gathers a layer in as many calls as its module buckets") {
  const ModelSpec m = resolve_model("gpt3-13b");  // 3 gathers per layer (tests/plan/test_zero3_collectives.cpp)
  GemmOnlyCost cost(1e-3);                        // every call 1 ms
  cost.vocab_ = m.vocab;
  ParallelPlan p;
  p.dp = 4;
  p.zero_stage = 3;
  p.global_batch = 4;
  SimulationOptions keep;
  keep.keep_trace = true;
  const auto gathered_s = [&](Zero3Collectives z) {
    p.zero3_collectives = z;
    const Prediction r = predict_iteration(m, p, cluster(4), cost, keep);
    double s = 0;
    for (size_t i = 0; i < r.trace.graph.tasks().size(); ++i) {
      if (r.trace.graph.tasks()[i].category == static_cast<int32_t>(TaskCategory::kDpGather)) s += r.trace.timing[i].end_s - r.trace.timing[i].start_s;
    }
    return s;
  };
  const double fsdp = gathered_s(Zero3Collectives::kPerLayer), deepspeed = gathered_s(Zero3Collectives::kDeepSpeed);
  CHECK(fsdp > 0);
  CHECK(deepspeed == Approx(3.0 * fsdp));
}

TEST_CASE("HSDP shards the states inside a group and all-reduces each shard's gradients across the groups") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  GemmOnlyCost cost(1e-3);  // every collective 1 ms
  cost.vocab_ = m.vocab;
  ParallelPlan p;
  p.dp = 16;
  p.zero_stage = 3;
  p.global_batch = 16;
  const Prediction fsdp = predict_iteration(m, p, cluster(16), cost);
  p.dp_shard = 8;  // shard inside a node, 2 replicas
  REQUIRE(validate_plan(p, m, "test").empty());
  SimulationOptions keep;
  keep.keep_trace = true;
  const Prediction hsdp = predict_iteration(m, p, cluster(16), cost, keep);
  const double n = static_cast<double>(hsdp.memory.stages[0].params);
  CHECK(hsdp.memory.stages[0].memory.optimizer_bytes == Approx(12.0 * n / 8.0));
  CHECK(fsdp.memory.stages[0].memory.optimizer_bytes == Approx(12.0 * n / 16.0));
  int64_t reductions = 0;
  for (const auto& task : hsdp.trace.graph.tasks()) reductions += task.category == static_cast<int32_t>(TaskCategory::kDpReduce) ? 1 : 0;
  CHECK(reductions == 3);  // the micro-batch's reduce-scatters in the group (the first layer's backward on, the last's), the all-reduce across groups
  CHECK(hsdp.iteration_time_s == Approx(fsdp.iteration_time_s + 1e-3));  // that all-reduce is exposed here
  CHECK_THAT(validate_plan([&] { ParallelPlan q = p; q.dp_shard = 5; return q; }(), m, "test").items()[0], Catch::Contains("must divide"));
}
