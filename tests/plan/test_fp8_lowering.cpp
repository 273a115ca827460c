// FP8's casts, transposes, all-gathers and amax reductions (plan/fp8_lowering.cpp), by hand.
#include <catch2/catch.hpp>

#include <string>

#include "common/op_category.hpp"
#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"

using namespace trainsim;

namespace {

double sum_bytes(const std::vector<Op>& ops, const std::string& prefix) {
  double bytes = 0;
  for (const Op& op : ops) {
    if (std::string(op.name).rfind(prefix, 0) == 0) bytes += op.bytes;
  }
  return bytes;
}

double first_bytes(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op.bytes;
  }
  return -1;
}

ParallelPlan plan_at(Precision precision, int64_t tp, bool sp) {
  ParallelPlan p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.global_batch = 1;
  p.precision = precision;
  return p;
}

}  // namespace

TEST_CASE("FP8 casts around a dense layer's four linears, by hand (GPT-2 124M, one rank)") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const IterationWork bf16 = lower_iteration(m, plan_at(Precision::kBf16, 1, false));
  const IterationWork fp8 = lower_iteration(m, plan_at(Precision::kFp8, 1, false));
  CHECK(sum_bytes(bf16.layer.forward, "fp8_") == 0);
  // Forward: QKV's and FC1's FP8 inputs come from the norms (a transpose each, read 1 B + write
  // 1 B); the projection's and FC2's inputs are cast and transposed (read 2 B, write 1 + 1 B).
  CHECK(sum_bytes(fp8.layer.forward, "fp8_") == Approx(2 * t * h + 4 * t * h + 2 * t * h + 4 * t * f));
  // The norms write their output in FP8: one byte less per value.
  CHECK(first_bytes(fp8.layer.forward, "norm1") == Approx(first_bytes(bf16.layer.forward, "norm1") - t * h));
  // Backward: every linear's output gradient cast and transposed (QKV's is 3h wide, FC1's f).
  CHECK(sum_bytes(fp8.layer.backward, "fp8_") == Approx(4 * t * 3 * h + 4 * t * h + 4 * t * f + 4 * t * h));
  // Full recomputation casts again.
  ParallelPlan full = plan_at(Precision::kFp8, 1, false);
  full.recompute = Recompute::kFull;
  CHECK(sum_bytes(lower_iteration(m, full).layer.recompute, "fp8_") == Approx(sum_bytes(fp8.layer.forward, "fp8_")));
  for (const Op& op : fp8.layer.forward) {
    if (std::string(op.name).rfind("fp8_", 0) == 0) CHECK(op_category_of(op.name) == OpCategory::kFp8Cast);
  }
}

TEST_CASE("FP8 with sequence parallelism: all-gathers carry one byte per value, the row-parallel gradients are cast on the shard") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden);
  const IterationWork bf16 = lower_iteration(m, plan_at(Precision::kBf16, 4, true));
  const IterationWork fp8 = lower_iteration(m, plan_at(Precision::kFp8, 4, true));
  CHECK(first_bytes(fp8.layer.forward, "sp_allgather") == Approx(0.5 * first_bytes(bf16.layer.forward, "sp_allgather")));
  CHECK(first_bytes(fp8.layer.backward, "sp_allgather_wgrad") == Approx(0.5 * first_bytes(bf16.layer.backward, "sp_allgather_wgrad")));
  // Reduce-scatters carry the GEMMs' bf16 outputs.
  CHECK(first_bytes(fp8.layer.forward, "sp_reducescatter") == Approx(first_bytes(bf16.layer.forward, "sp_reducescatter")));
  // The projection's output gradient (t x h, gathered): quantized on the shard (3 B per value),
  // transposed after the gather (2 B per gathered value).
  const double proj_grad = 3 * t * h / 4 + 2 * t * h;
  const double qkv_grad = 4 * t * 3 * h / 4, fc1_grad = 4 * t * 4 * h / 4;
  const double transposes = 2 * (2 * t * h);  // QKV's and FC1's gathered inputs, in the backward
  CHECK(sum_bytes(fp8.layer.backward, "fp8_") == Approx(qkv_grad + proj_grad + fc1_grad + proj_grad + transposes));
}

TEST_CASE("FP8 amax reductions once per chunk and micro-batch over the stage, weight casts once per iteration") {
  const ModelSpec m = resolve_model("gpt2-124m");
  ParallelPlan p = plan_at(Precision::kFp8, 2, true);
  p.dp = 2;
  p.global_batch = 2;
  const IterationWork fp8 = lower_iteration(m, p);
  REQUIRE(fp8.chunk_forward.size() == 1);
  REQUIRE(fp8.chunk_backward.size() == 1);
  CHECK(fp8.chunk_forward[0].group == GroupKind::kStage);
  CHECK(fp8.chunk_forward[0].bytes == Approx(3 * 4 * 4 * static_cast<double>(m.layers)));  // 3 amaxes of 4 linears, fp32
  CHECK(group_scope(p, GroupKind::kStage, 8).size == 4);
  CHECK(fp8.weight_cast_bytes_per_param == 4);
  CHECK(fp8.weight_bytes_per_param == 2);
  p.fp8_params = true;
  const IterationWork fp8_params = lower_iteration(m, p);
  CHECK(fp8_params.weight_cast_bytes_per_param == 0);
  CHECK(fp8_params.weight_bytes_per_param == 1);  // the distributed optimizer gathers FP8 weights
  const IterationWork bf16 = lower_iteration(m, plan_at(Precision::kBf16, 2, true));
  CHECK(bf16.chunk_forward.empty());
  CHECK(bf16.weight_cast_bytes_per_param == 0);
}

TEST_CASE("FP8 per-tensor current scaling (tensorwise): an amax pass before every cast, the norm's output cast apart, no chunk amax reductions") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  ParallelPlan delayed_plan = plan_at(Precision::kFp8, 1, false), current_plan = delayed_plan;
  current_plan.fp8_recipe = Fp8Recipe::kTensorwise;
  const IterationWork bf16 = lower_iteration(m, plan_at(Precision::kBf16, 1, false));
  const IterationWork delayed = lower_iteration(m, delayed_plan), current = lower_iteration(m, current_plan);
  // Forward: QKV's and FC1's inputs: the norm writes bf16 (as without FP8), a cast reads it and
  // writes the row-wise copy (3 B), then the transpose (2 B); the projection's and FC2's inputs:
  // amax (2 B) then cast and transpose (4 B).
  CHECK(first_bytes(current.layer.forward, "norm1") == Approx(first_bytes(bf16.layer.forward, "norm1")));
  CHECK(sum_bytes(current.layer.forward, "fp8_") == Approx(5 * t * h + 6 * t * h + 5 * t * h + 6 * t * f));
  // Backward: every output gradient takes the amax pass too (6 B per value, not 4).
  CHECK(sum_bytes(current.layer.backward, "fp8_") == Approx(1.5 * sum_bytes(delayed.layer.backward, "fp8_")));
  // No amax history: no per-chunk reductions; the weights' cast reads them once more.
  for (const Op& op : current.chunk_forward) CHECK(std::string(op.name) != "fp8_amax_allreduce");
  CHECK(current.weight_cast_bytes_per_param == 6.0);
  CHECK(delayed.weight_cast_bytes_per_param == 4.0);
  // Without SP no tensor crosses ranks before its cast: no TP amax all-reduce.
  CHECK(sum_bytes(current.layer.forward, "fp8_amax_tp") == 0);
}

TEST_CASE("FP8 tensorwise with sequence parallelism: one amax all-reduce over TP per gathered input and per gathered row-parallel gradient") {
  const ModelSpec m = resolve_model("gpt2-124m");
  ParallelPlan p = plan_at(Precision::kFp8, 4, true);
  p.fp8_recipe = Fp8Recipe::kTensorwise;
  const IterationWork w = lower_iteration(m, p);
  int forward = 0, backward = 0;
  for (const Op& op : w.layer.forward) forward += std::string(op.name) == "fp8_amax_tp_allreduce" && op.group == GroupKind::kTp && op.bytes == 4.0;
  for (const Op& op : w.layer.backward) backward += std::string(op.name) == "fp8_amax_tp_allreduce_bwd" && op.group == GroupKind::kTp;
  CHECK(forward == 2);   // QKV's and FC1's inputs
  CHECK(backward == 2);  // the projection's and FC2's output gradients
}
