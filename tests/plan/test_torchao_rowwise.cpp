// torchao's row-wise FP8 recipe (plan/torchao_rowwise.cpp, plan/fp8_lowering.cpp): the measured
// speedup table, its interpolation, and how the lowering and the cost model use it.
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <string>

#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/torchao_rowwise.hpp"
#include "sim/cost_model.hpp"
#include "tests/plan/op_lookup.hpp"

using namespace trainsim;
using trainsim::test::find_op;

TEST_CASE("the row-wise table gives its measured points, interpolates in log2, continues its first octave to 512 and holds beyond") {
  // Points read off torchao's chart (pytorch/ao@fdddb2cf docs/static/fp8-rowwise-perf.png).
  CHECK(torchao_rowwise_speedup(1024, 1024, 1024) == Approx(0.42));
  CHECK(torchao_rowwise_speedup(4096, 8192, 16384) == Approx(1.07));
  CHECK(torchao_rowwise_speedup(32768, 16384, 32768) == Approx(1.73));
  CHECK(torchao_rowwise_speedup(32768, 32768, 32768) == Approx(1.52));
  // Half-way in log2(N) between 8192 (1.20) and 16384 (1.31) at M 8192, K 8192.
  CHECK(torchao_rowwise_speedup(8192, 8192, static_cast<int64_t>(std::llround(8192 * std::sqrt(2.0)))) == Approx(1.255).epsilon(1e-3));
  // Above 32768 the last point; below 1024 the first octave's slope, one octave on: at M 32768,
  // K 4096, N 1024 -> 2048 is 0.59 -> 0.81, so N 512 is 0.37, and N 128 holds at 512's.
  CHECK(torchao_rowwise_speedup(131072, 4096, 1024) == Approx(0.59));
  CHECK(torchao_rowwise_speedup(32768, 4096, 512) == Approx(0.37));
  CHECK(torchao_rowwise_speedup(131072, 4096, 128) == Approx(0.37));
  CHECK(torchao_rowwise_speedup(1, 1, 1) == Approx(torchao_rowwise_speedup(512, 512, 512)));
  // Never at or below zero: the smallest over every shape is M 512, K and N 4096.
  double lowest = 10.0;
  for (int64_t m = 256; m <= 65536; m *= 2) {
    for (int64_t k = 256; k <= 65536; k *= 2) {
      for (int64_t n = 256; n <= 65536; n *= 2) lowest = std::min(lowest, torchao_rowwise_speedup(m, k, n));
    }
  }
  CHECK(lowest == Approx(0.24));
}

TEST_CASE("a row-wise FP8 layer: its linears carry the table's speedup, no casts, no amax reductions, no weight casts") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p;
  p.tp = 8;
  p.dp = 1;
  p.sequence_parallel = true;
  p.global_batch = 1;
  p.precision = Precision::kFp8;
  const IterationWork delayed = lower_iteration(m, p);
  p.fp8_recipe = Fp8Recipe::kRowwise;
  const IterationWork rowwise = lower_iteration(m, p);
  int casts = 0;
  for (const Op& op : rowwise.layer.forward) casts += std::string(op.name).rfind("fp8_", 0) == 0 ? 1 : 0;
  for (const Op& op : rowwise.layer.backward) casts += std::string(op.name).rfind("fp8_", 0) == 0 ? 1 : 0;
  CHECK(casts == 0);
  CHECK(rowwise.chunk_forward.empty());
  CHECK(rowwise.weight_cast_bytes_per_param == 0);
  CHECK_FALSE(delayed.chunk_forward.empty());
  // The all-gathers stay bf16 (the delayed recipe gathers FP8: half the bytes).
  CHECK(find_op(rowwise.layer.forward, "sp_allgather")->bytes == Approx(2 * find_op(delayed.layer.forward, "sp_allgather")->bytes));
  // The projection: M = 8192 tokens, K = 4096 / 8, N = 4096: the table's first octave continued to K 512.
  const Op* proj = find_op(rowwise.layer.forward, "proj");
  CHECK(proj->fp8_linear_speedup == Approx(torchao_rowwise_speedup(8192, 512, 4096)));
  CHECK(find_op(rowwise.layer.backward, "proj_dgrad")->fp8_linear_speedup == proj->fp8_linear_speedup);
  CHECK(find_op(rowwise.layer.backward, "proj_wgrad")->fp8_linear_speedup == proj->fp8_linear_speedup);
  // QKV fuses torchtitan's wq (N 512), wk and wv (N 128 each): the FLOP-weighted harmonic mean.
  const double sq = torchao_rowwise_speedup(8192, 4096, 512), skv = torchao_rowwise_speedup(8192, 4096, 128);
  CHECK(find_op(rowwise.layer.forward, "qkv")->fp8_linear_speedup == Approx(768.0 / (512 / sq + 256 / skv)));
  // SwiGLU's FC1 fuses w1 and w3, each ffn / tp wide.
  CHECK(find_op(rowwise.layer.forward, "fc1")->fp8_linear_speedup == Approx(torchao_rowwise_speedup(8192, 4096, 14336 / 8)));
  CHECK(find_op(delayed.layer.forward, "qkv")->fp8_linear_speedup == 0);
}

TEST_CASE("the cost model prices a row-wise FP8 GEMM as the bf16 GEMM over its speedup") {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = 8;
  const DatasheetCostModel fp8(hw, Precision::kFp8, default_efficiency_constants());
  const DatasheetCostModel bf16(hw, Precision::kBf16, default_efficiency_constants());
  Op op;
  op.kind = OpKind::kGemm;
  op.m = 8192;
  op.n = 4096;
  op.k = 4096;
  const GroupScope none{};
  const double delayed_s = fp8.op_s(op, none);
  op.fp8_linear_speedup = 0.8;
  CHECK(fp8.op_s(op, none) == Approx(bf16.gemm_s(8192, 4096, 4096, 1) / 0.8));
  CHECK(fp8.op_s(op, none) > delayed_s);  // slower than bf16 here, so slower than an FP8 GEMM
}
