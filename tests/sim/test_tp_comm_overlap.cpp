// TP communication overlap (tp_comm_overlap): which collectives pair with which GEMMs, what an
// overlap leaves exposed by closed form, the plan rules, and the exports that carry it.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/plan_json.hpp"
#include "sim/step_cost.hpp"

using namespace trainsim;

namespace {

ParallelPlan tp_plan(bool overlap) {
  ParallelPlan p;
  p.tp = 4;
  p.dp = 2;
  p.sequence_parallel = true;
  p.tp_comm_overlap = overlap;
  p.global_batch = 2;
  return p;
}

const Op& nth(const std::vector<Op>& ops, const std::string& name, int occurrence) {
  for (const Op& op : ops) {
    if (name == op.name && occurrence-- == 0) return op;
  }
  FAIL("no op " << name);
  return ops.front();
}

const char* hiding_name(const std::vector<Op>& ops, const Op& op) {
  return op.overlaps_op < 0 ? "" : ops[static_cast<size_t>(op.overlaps_op)].name;
}

Op collective_with(double hideable, double exposed, int32_t sms) {
  Op op;
  op.kind = OpKind::kCollective;
  op.overlap_hideable_fraction = hideable;
  op.overlap_exposed_fraction = exposed;
  op.overlap_comm_sms = sms;
  return op;
}

}  // namespace

TEST_CASE("TP comm overlap pairs every TP collective of a dense layer with the GEMM Transformer Engine overlaps it with") {
  const ModelSpec m = resolve_model("llama3-8b");
  const LayerWork w = lower_iteration(m, tp_plan(true)).layer;
  // Forward: ring-exchange all-gathers before QKV and FC1, pipelined reduce-scatters after PROJ and FC2.
  CHECK(std::string(hiding_name(w.forward, nth(w.forward, "sp_allgather", 0))) == "qkv");
  CHECK(std::string(hiding_name(w.forward, nth(w.forward, "sp_allgather", 1))) == "fc1");
  CHECK(std::string(hiding_name(w.forward, nth(w.forward, "sp_reducescatter", 0))) == "proj");
  CHECK(std::string(hiding_name(w.forward, nth(w.forward, "sp_reducescatter", 1))) == "fc2");
  // Backward: the output gradient's all-gather beside PROJ's and FC2's dgrad (ring exchange), the
  // input's all-gather beside QKV's and FC1's dgrad, and their dgrad reduce-scatter beside the wgrad (bulk).
  CHECK(std::string(hiding_name(w.backward, nth(w.backward, "sp_allgather", 0))) == "proj_dgrad");
  CHECK(std::string(hiding_name(w.backward, nth(w.backward, "sp_allgather", 1))) == "fc2_dgrad");
  CHECK(std::string(hiding_name(w.backward, nth(w.backward, "sp_allgather_wgrad", 0))) == "qkv_dgrad");
  CHECK(std::string(hiding_name(w.backward, nth(w.backward, "sp_reducescatter", 1))) == "fc1_wgrad");
  const Op& ring = nth(w.forward, "sp_allgather", 0);
  CHECK(ring.overlap_hideable_fraction == Approx(3.0 / 4.0));  // tp 4: the first chunk is local
  CHECK(ring.overlap_comm_sms == 0);                           // copy engines
  const Op& pipelined = nth(w.forward, "sp_reducescatter", 0);
  CHECK(pipelined.overlap_exposed_fraction == Approx(1.0 / 4.0));  // 4 splits: the last one shows
  CHECK(pipelined.overlap_comm_sms == 16);

  // Without it only the backward pairs (Megatron-LM's asynchronous TP): the forward is exposed.
  const LayerWork plain = lower_iteration(m, tp_plan(false)).layer;
  CHECK(nth(plain.forward, "sp_allgather", 0).overlaps_op == -1);
  CHECK(nth(plain.forward, "sp_reducescatter", 0).overlaps_op == -1);
}

TEST_CASE("per-op checkpointing re-points a recomputed all-gather's overlap at the GEMM's copy, or drops it") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p = tp_plan(true);
  p.recompute = Recompute::kSelectiveOp;
  const LayerWork w = lower_iteration(m, p).layer;
  for (const Op& op : w.recompute) {
    if (op.overlaps_op < 0) continue;
    REQUIRE(op.overlaps_op < static_cast<int32_t>(w.recompute.size()));
    const Op& hiding = w.recompute[static_cast<size_t>(op.overlaps_op)];
    CHECK(hiding.kind == OpKind::kGemm);
  }
}

TEST_CASE("an overlap leaves exposed what the hiding op cannot cover, and slows the hiding op while they share the GPU") {
  const double slowdown = 0.189;  // arXiv 2507.03114's mean compute slowdown under overlap
  // Bulk, a collective shorter than its GEMM: hidden; the GEMM 18.9% slower for the collective's 1 ms.
  CHECK(overlapped_collective_s(collective_with(1.0, 0.0, 0), 1e-3, 4e-3, 132) == Approx(slowdown * 1e-3));
  // Longer than the GEMM: the difference shows, plus the slowdown over the GEMM's 1 ms.
  CHECK(overlapped_collective_s(collective_with(1.0, 0.0, 0), 3e-3, 1e-3, 132) == Approx(2e-3 + slowdown * 1e-3));
  // A ring exchange over tp 4: only 3/4 of the GEMM can hide it.
  CHECK(overlapped_collective_s(collective_with(0.75, 0.0, 0), 4e-3, 4e-3, 132) == Approx(1e-3 + slowdown * 3e-3));
  // A pipelined reduce-scatter on 16 of 132 SMs: the GEMM runs 132/116 as long, the last of 4 splits shows.
  const double stretched = 4e-3 * 132.0 / 116.0;
  CHECK(overlapped_collective_s(collective_with(0.75, 0.25, 16), 1e-3, 4e-3, 132) ==
        Approx((stretched - 4e-3) + 0.25e-3 + slowdown * 1e-3));
}

TEST_CASE("TP comm overlap needs tensor and sequence parallelism, as Megatron-Core asserts") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p = tp_plan(true);
  p.sequence_parallel = false;
  const std::vector<std::string> problems = validate_plan(p, m, "test").items();
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("tp_comm_overlap") && Catch::Contains("sequence_parallel"));
  CHECK(validate_plan(tp_plan(true), m, "test").empty());
}

TEST_CASE("TP comm overlap exports as --tp-comm-overlap and enable_async_tensor_parallel, and reads back") {
  const ModelSpec m = resolve_model("llama3-70b");
  ParallelPlan p = tp_plan(true);
  p.tp = 8;
  p.global_batch = 16;
  const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
  CHECK_THAT(args, Catch::Contains("--tp-comm-overlap"));
  CHECK(parse_megatron_args(args, m, p.gpus()).tp_comm_overlap);
  p.zero_stage = 3;
  p.cross_entropy = LossKernel::kPytorch;
  const std::string toml = export_plan(&m, p, 8, ExportTarget::kTorchtitan);
  CHECK_THAT(toml, Catch::Contains("enable_async_tensor_parallel = true"));
  CHECK(parse_torchtitan_toml(toml, m, p.gpus()).tp_comm_overlap);
  const nlohmann::ordered_json j = plan_to_json(p);
  CHECK(j["tp_comm_overlap"] == true);
}
