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

double sum_tn_bytes(const std::vector<Op>& ops) {
  double bytes = 0;
  for (const Op& op : ops) bytes += op.tn_layout_bytes;
  return bytes;
}

int count_named(const std::vector<Op>& ops, const std::string& name) {
  int n = 0;
  for (const Op& op : ops) n += op.name == name;
  return n;
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

TEST_CASE("Per-tensor FP8's transposed copies are marked as the TN layout's, which Blackwell skips") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const IterationWork fp8 = lower_iteration(m, plan_at(Precision::kFp8, 1, false));
  // Forward: QKV's and FC1's transposes (2 B per value), the projection's and FC2's column-wise
  // byte; backward: one column-wise byte per output-gradient value.
  CHECK(sum_tn_bytes(fp8.layer.forward) == Approx(2 * t * h + t * h + 2 * t * h + t * f));
  CHECK(sum_tn_bytes(fp8.layer.backward) == Approx(t * 3 * h + t * h + t * f + t * h));
  CHECK(fp8.weight_cast_tn_bytes_per_param == 1.0);
}

TEST_CASE("MXFP8: one kernel writes both layouts (2 + 2 x 1.03 B per value), no amax anywhere, gathers carry 1.03 B") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double mx = 2.0 + 2.0 * (1.0 + 1.0 / 32.0);
  const IterationWork bf16 = lower_iteration(m, plan_at(Precision::kBf16, 1, false));
  const IterationWork mxfp8 = lower_iteration(m, plan_at(Precision::kMxfp8, 1, false));
  // The norm writes bf16 (Transformer Engine fuses only delayed scaling's cast into it) and every
  // linear's input and output gradient is quantized once; nothing is transposed.
  CHECK(first_bytes(mxfp8.layer.forward, "norm1") == Approx(first_bytes(bf16.layer.forward, "norm1")));
  CHECK(sum_bytes(mxfp8.layer.forward, "fp8_") == Approx(mx * (t * h + t * h + t * h + t * f)));
  CHECK(sum_bytes(mxfp8.layer.backward, "fp8_") == Approx(mx * (t * 3 * h + t * h + t * f + t * h)));
  CHECK(sum_tn_bytes(mxfp8.layer.forward) == 0);
  CHECK(mxfp8.chunk_forward.empty());
  CHECK(mxfp8.weight_cast_bytes_per_param == Approx(mx));
  // MXFP8 primary weights are gathered in bf16 through the gradient buffer and quantized again.
  ParallelPlan params = plan_at(Precision::kMxfp8, 1, false);
  params.fp8_params = true;
  CHECK(lower_iteration(m, params).weight_cast_bytes_per_param == Approx(mx));
  CHECK(lower_iteration(m, params).weight_bytes_per_param == 2);
  // With SP: the shard quantized, the row-wise copy gathered (1.03 B), the column-wise one
  // gathered again in the backward (1.03 B), the output gradient's both layouts (2.06 B).
  const IterationWork bf16_sp = lower_iteration(m, plan_at(Precision::kBf16, 4, true));
  const IterationWork sp = lower_iteration(m, plan_at(Precision::kMxfp8, 4, true));
  CHECK(first_bytes(sp.layer.forward, "sp_allgather") == Approx(first_bytes(bf16_sp.layer.forward, "sp_allgather") * (1.0 + 1.0 / 32.0) / 2.0));
  CHECK(first_bytes(sp.layer.backward, "sp_allgather_wgrad") == Approx(first_bytes(bf16_sp.layer.backward, "sp_allgather_wgrad") * (1.0 + 1.0 / 32.0) / 2.0));
  CHECK(first_bytes(sp.layer.backward, "sp_allgather") == Approx(first_bytes(bf16_sp.layer.backward, "sp_allgather") * (1.0 + 1.0 / 32.0)));
  CHECK(count_named(sp.layer.forward, "fp8_amax_tp_allreduce") == 0);
  CHECK(first_bytes(sp.layer.forward, "fp8_cast") == Approx(mx * t * h / 4));  // QKV's input, on the shard
}

TEST_CASE("NVFP4: an amax pass and the Hadamard cast (1.475x MXFP8's per value, measured), TP amax all-reduces, gathers in NVFP4") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden);
  const double mx = 2.0 + 2.0 * (1.0 + 1.0 / 32.0), nv = mx * 2.688 / 1.822, layout = 0.5 + 1.0 / 16.0;
  const IterationWork mxfp8 = lower_iteration(m, plan_at(Precision::kMxfp8, 1, false));
  const IterationWork nvfp4 = lower_iteration(m, plan_at(Precision::kNvfp4, 1, false));
  CHECK(sum_bytes(nvfp4.layer.forward, "fp8_") == Approx(sum_bytes(mxfp8.layer.forward, "fp8_") * nv / mx));
  CHECK(nvfp4.weight_cast_bytes_per_param == Approx(nv));
  CHECK(nvfp4.chunk_forward.empty());
  const IterationWork bf16_sp = lower_iteration(m, plan_at(Precision::kBf16, 4, true));
  const IterationWork sp = lower_iteration(m, plan_at(Precision::kNvfp4, 4, true));
  CHECK(count_named(sp.layer.forward, "fp8_amax_tp_allreduce") == 2);
  CHECK(count_named(sp.layer.backward, "fp8_amax_tp_allreduce_bwd") == 2);
  CHECK(first_bytes(sp.layer.forward, "sp_allgather") == Approx(first_bytes(bf16_sp.layer.forward, "sp_allgather") * layout / 2.0));
  // After each backward gather the column-wise data is laid out again (read and write 0.5625 B).
  const double gathered_values = first_bytes(bf16_sp.layer.backward, "sp_allgather_wgrad") / 2.0;
  CHECK(first_bytes(sp.layer.backward, "fp8_gathered_relayout") == Approx(gathered_values * 2 * layout));
  CHECK(t * h == Approx(gathered_values));
  // A GPU without FP4 cannot run it: checked where the hardware is known (the catalog's peak).
}

TEST_CASE("FP8 blockwise: one kernel writes both layouts with an fp32 scale per 128, no amax, the linears' GEMMs marked block-scaled") {
  const ModelSpec m = resolve_model("gpt2-124m");
  const double t = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double layout = 1.0 + 4.0 / 128.0, block = 2.0 + 2.0 * layout;
  ParallelPlan p = plan_at(Precision::kFp8, 1, false);
  p.fp8_recipe = Fp8Recipe::kBlockwise;
  const IterationWork w = lower_iteration(m, p);
  CHECK(sum_bytes(w.layer.forward, "fp8_") == Approx(block * (t * h + t * h + t * h + t * f)));
  CHECK(sum_tn_bytes(w.layer.forward) == 0);
  CHECK(w.chunk_forward.empty());
  CHECK(w.weight_cast_bytes_per_param == Approx(block));
  int marked = 0;
  for (const auto* ops : {&w.layer.forward, &w.layer.backward}) {
    for (const Op& op : *ops) marked += op.fp8_block_scaled;
  }
  CHECK(marked == 12);  // QKV, projection, FC1, FC2: forward, dgrad and wgrad
  // With SP: row-wise data gathered forward, column-wise backward, then re-laid (read and write 1 B).
  ParallelPlan sp = plan_at(Precision::kFp8, 4, true);
  sp.fp8_recipe = Fp8Recipe::kBlockwise;
  const IterationWork bf16 = lower_iteration(m, plan_at(Precision::kBf16, 4, true)), ws = lower_iteration(m, sp);
  CHECK(first_bytes(ws.layer.forward, "sp_allgather") == Approx(first_bytes(bf16.layer.forward, "sp_allgather") * layout / 2.0));
  CHECK(first_bytes(ws.layer.backward, "fp8_gathered_relayout") == Approx(t * h * 2.0));
}
