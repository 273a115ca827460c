// A profiler trace as a measurement: the phases partition each step's window (forward / backward /
// optimizer where compute runs, exposed collectives by kind, waiting where nothing runs), the
// pass comes from annotations or the launching thread, op categories are kernel-time sums.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/errors.hpp"
#include "interop/trace_measurement.hpp"

using namespace trainsim;

namespace {

// A kernel launched from `tid` (correlation = a fresh id, its launch at `launch_us`).
void add_kernel(KinetoTrace& t, const std::string& name, double ts, double dur, int64_t stream, int64_t tid, double launch_us) {
  const int64_t corr = static_cast<int64_t>(t.kernels.size()) + 1;
  TraceKernel k;
  k.name = name;
  k.ts_us = ts;
  k.dur_us = dur;
  k.pid = "0";
  k.stream = stream;
  k.correlation = corr;
  k.launch_tid = tid;
  t.kernels.push_back(k);
  t.launch_ts_us[corr] = launch_us;
}

// One step of 1000 us on the CPU: forward GEMM [100, 300) and norm [300, 350) from the main thread
// (1), backward GEMM [400, 700) from the autograd thread (2), an all-reduce on stream 2 [600, 800)
// (100 us exposed), the optimizer [850, 900) from the main thread; nothing in [0, 100), [350, 400),
// [800, 850): 200 us waiting in a window from the CPU span's start (0) to the last kernel's end (900).
KinetoTrace one_step() {
  KinetoTrace t;
  t.file = "synthetic.json";
  t.device_name = "NVIDIA H100 80GB HBM3";
  t.steps.push_back({"ProfilerStep#7", 0, 900, "cpu"});
  add_kernel(t, "sm90_xmma_gemm_bf16bf16_bf16f32", 100, 200, 7, 1, 10);
  add_kernel(t, "void at::native::vectorized_layer_norm_kernel<float>", 300, 50, 7, 1, 20);
  add_kernel(t, "sm90_xmma_gemm_bf16bf16_bf16f32_dgrad", 400, 300, 7, 2, 30);
  add_kernel(t, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 600, 200, 13, 2, 40);
  add_kernel(t, "void at::native::multi_tensor_apply_kernel<AdamFunctor>", 850, 50, 7, 1, 800);
  return t;
}

}  // namespace

TEST_CASE("trace measurement: phases partition the step window", "[trace][measurement]") {
  const TraceMeasurement tm = measurement_from_traces({one_step()}, TracePlanGroups{});
  const Measurement& m = tm.measurement;
  REQUIRE(m.iterations.size() == 1);
  CHECK(m.iterations[0].iteration == 7);
  CHECK(m.backend == "trace");
  CHECK(m.warmup_iterations == 0);
  const PhaseBreakdown& b = m.breakdown;
  CHECK(m.iteration_time_s == Approx(900e-6));  // from the CPU span's start to the last kernel's end
  CHECK(b.forward_s == Approx(250e-6));
  CHECK(b.backward_s == Approx(300e-6));
  CHECK(b.optimizer_s == Approx(50e-6));
  CHECK(b.dp_comm_exposed_s == Approx(100e-6));  // no plan stated: an all-reduce is DP's
  CHECK(b.tp_comm_exposed_s == 0);
  CHECK(b.bubble_s == Approx(200e-6));
  CHECK(b.forward_s + b.backward_s + b.optimizer_s + b.dp_comm_exposed_s + b.bubble_s == Approx(m.iteration_time_s));
  CHECK(tm.passes.kernels_by_thread == 3);
  REQUIRE(m.op_categories.size() == 1);
  const OpCategoryTimes& ops = m.op_categories[0];
  CHECK(ops.forward_s[static_cast<size_t>(OpCategory::kGemmOther)] == Approx(200e-6));
  CHECK(ops.backward_s[static_cast<size_t>(OpCategory::kGemmOther)] == Approx(300e-6));
  CHECK(ops.forward_s[static_cast<size_t>(OpCategory::kNorm)] == Approx(50e-6));
  CHECK(ops.forward_s[static_cast<size_t>(OpCategory::kOptimizer)] == Approx(50e-6));
  CHECK(ops.total_s(OpCategory::kTpComm) == 0);  // DP traffic stays in the phases
}

TEST_CASE("trace measurement: a stated TP-only plan makes the all-reduce TP's", "[trace][measurement]") {
  TracePlanGroups g;
  g.stated = true;
  g.tp = 8;
  const TraceMeasurement tm = measurement_from_traces({one_step()}, g);
  CHECK(tm.measurement.breakdown.tp_comm_exposed_s == Approx(100e-6));
  CHECK(tm.measurement.breakdown.dp_comm_exposed_s == 0);
  CHECK(tm.measurement.op_categories[0].backward_s[static_cast<size_t>(OpCategory::kTpComm)] == Approx(200e-6));
}

TEST_CASE("trace measurement: annotations name the pass before the thread does", "[trace][measurement]") {
  KinetoTrace t = one_step();
  // DualPipe-style CPU ranges: the launch of the first GEMM (at 10 us) sits inside "attn(B)".
  t.cpu_annotations.push_back({"attn(B)", 5, 10, "cpu"});
  const TraceMeasurement tm = measurement_from_traces({t}, TracePlanGroups{});
  CHECK(tm.passes.kernels_by_annotation == 1);
  CHECK(tm.measurement.breakdown.backward_s == Approx(500e-6));
  CHECK(tm.measurement.breakdown.forward_s == Approx(50e-6));
}

TEST_CASE("trace measurement: overlapping passes share the time, a lagging GPU keeps its period", "[trace][measurement]") {
  KinetoTrace t;
  t.file = "lag.json";
  // Two steps whose CPU spans are 100 us apart while the GPU needs 300 us per step.
  t.steps.push_back({"ProfilerStep#1", 0, 100, "cpu"});
  t.steps.push_back({"ProfilerStep#2", 100, 100, "cpu"});
  add_kernel(t, "gemm_a", 50, 300, 7, 1, 10);    // step 1, forward
  add_kernel(t, "gemm_b", 150, 100, 8, 2, 20);   // step 1, backward, overlapping the forward
  add_kernel(t, "gemm_c", 350, 300, 7, 1, 110);  // step 2
  const TraceMeasurement tm = measurement_from_traces({t}, TracePlanGroups{});
  const Measurement& m = tm.measurement;
  REQUIRE(m.iterations.size() == 2);
  CHECK(m.iterations[0].time_s == Approx(350e-6));  // from its CPU start to its last kernel's end
  CHECK(m.iterations[1].time_s == Approx(300e-6));  // from the previous step's GPU end to its own
  CHECK(m.iterations[0].phases.forward_s == Approx(250e-6));  // 200 alone + half of the 100 shared
  CHECK(m.iterations[0].phases.backward_s == Approx(50e-6));
  CHECK(m.iterations[0].phases.bubble_s == Approx(50e-6));
}

TEST_CASE("trace measurement: the longest rank is the measurement", "[trace][measurement]") {
  KinetoTrace slow = one_step();
  slow.file = "rank1.json";
  add_kernel(slow, "gemm_tail", 900, 400, 7, 1, 850);
  const TraceMeasurement tm = measurement_from_traces({one_step(), slow}, TracePlanGroups{});
  CHECK(tm.critical_rank == 1);
  CHECK(tm.measurement.ranks == 2);
  CHECK(tm.measurement.iteration_time_s == Approx(1300e-6));
  CHECK(tm.rank_median_s[0] == Approx(900e-6));
}

TEST_CASE("trace measurement: kernel names to the op vocabulary", "[trace][measurement]") {
  const TracePlanGroups none;
  auto cat = [&](const char* n) { return static_cast<OpCategory>(trace_op_category(n, none)); };
  CHECK(cat("flash_fwd_kernel<Flash_fwd_kernel_traits>") == OpCategory::kAttentionFused);
  CHECK(cat("void at::native::(anonymous namespace)::cunn_SoftMaxForward") == OpCategory::kSoftmax);
  CHECK(cat("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>") ==
        OpCategory::kResidualBias);
  CHECK(cat("void transformer_engine::fp8_quantize_kernel") == OpCategory::kFp8Cast);
  CHECK(cat("dpsk::ep::dispatch<8>") == OpCategory::kEpComm);
  CHECK(cat("void at::native::nll_loss_forward_reduce_cuda_kernel_2d") == OpCategory::kCrossEntropy);
  CHECK(cat("some_unknown_kernel") == OpCategory::kOther);
  CHECK(trace_op_category("ncclDevKernel_AllGather_RING_LL", none) == -1);
}

TEST_CASE("trace measurement: a trace whose steps hold no kernel is refused", "[trace][measurement]") {
  KinetoTrace t = one_step();
  t.steps = {{"ProfilerStep#1", 5000, 10, "cpu"}};
  t.launch_ts_us.clear();
  for (TraceKernel& k : t.kernels) k.correlation = -1;
  CHECK_THROWS_AS(measurement_from_traces({t}, TracePlanGroups{}), InputError);
  CHECK_THROWS_AS(measurement_from_traces({}, TracePlanGroups{}), InputError);
}

TEST_CASE("trace measurement: a GEMM's role from its CPU op's shapes and the pass", "[trace][measurement]") {
  TracePlanGroups g;
  g.stated = true;
  g.model = {true, 1024, 16, 16, 64, 2816, 151936, true};  // Qwen1.5-0.5B's widths
  auto role = [&](const char* name, std::vector<std::vector<int64_t>> dims, bool backward, bool* ambiguous) {
    TraceCpuOp op;
    op.name = name;
    op.input_dims = std::move(dims);
    return gemm_role(op, g, backward, ambiguous);
  };
  bool q_or_proj = false;
  // Forward: x[tokens, in] . W^T[in, out] (addmm with a bias first; linear's weight is [out, in]).
  CHECK(role("aten::addmm", {{1024}, {8944, 1024}, {1024, 2816}}, false, &q_or_proj) == OpCategory::kGemmFc1);
  CHECK(role("aten::mm", {{8944, 2816}, {2816, 1024}}, false, &q_or_proj) == OpCategory::kGemmFc2);
  CHECK(role("aten::linear", {{2, 4472, 1024}, {151936, 1024}, {}}, false, &q_or_proj) == OpCategory::kGemmLmHead);
  CHECK_FALSE(q_or_proj);
  // Backward: the input gradient of FC1 g[tokens, 2816] . W[2816, 1024], its weight gradient g^T . x.
  CHECK(role("aten::mm", {{8944, 2816}, {2816, 1024}}, true, &q_or_proj) == OpCategory::kGemmFc1);
  CHECK(role("aten::mm", {{2816, 8944}, {8944, 1024}}, true, &q_or_proj) == OpCategory::kGemmFc1);
  CHECK(role("aten::mm", {{1024, 8944}, {8944, 2816}}, true, &q_or_proj) == OpCategory::kGemmFc2);
  // Query and attention output have the same widths: flagged for the caller.
  CHECK(role("aten::mm", {{8944, 1024}, {1024, 1024}}, false, &q_or_proj) == OpCategory::kGemmProj);
  CHECK(q_or_proj);
  // Not a linear layer of the model, not a GEMM op it reads, or no model stated.
  CHECK(role("aten::mm", {{8944, 1000}, {1000, 7}}, false, &q_or_proj) == OpCategory::kGemmOther);
  CHECK(role("aten::bmm", {{16, 559, 64}, {16, 64, 559}}, false, &q_or_proj) == OpCategory::kGemmOther);
  g.model.stated = false;
  CHECK(role("aten::mm", {{8944, 2816}, {2816, 1024}}, false, &q_or_proj) == OpCategory::kGemmOther);
}

TEST_CASE("trace measurement: query and output GEMMs are told apart by the attention kernel between them", "[trace][measurement]") {
  KinetoTrace t;
  t.file = "layer.json";
  t.steps.push_back({"ProfilerStep#1", 0, 1000, "cpu"});
  // One forward layer from the main thread: q, attention, o, up, down, each with its CPU op.
  const std::vector<std::pair<const char*, std::vector<std::vector<int64_t>>>> ops = {
      {"aten::mm", {{512, 1024}, {1024, 1024}}}, {"", {}}, {"aten::mm", {{512, 1024}, {1024, 1024}}},
      {"aten::mm", {{512, 1024}, {1024, 2816}}}, {"aten::mm", {{512, 2816}, {2816, 1024}}}};
  const char* kernels[] = {"sm90_xmma_gemm_q", "flash_fwd_kernel", "sm90_xmma_gemm_o", "sm90_xmma_gemm_up", "sm90_xmma_gemm_down"};
  for (size_t i = 0; i < ops.size(); ++i) {
    add_kernel(t, kernels[i], 100.0 * static_cast<double>(i + 1), 50, 7, 1, 10.0 * static_cast<double>(i + 1));
    t.kernels.back().external_id = static_cast<int64_t>(i) + 100;
    if (ops[i].first[0] != '\0') {
      TraceCpuOp op;
      op.name = ops[i].first;
      op.ts_us = 10.0 * static_cast<double>(i + 1) - 1;
      op.dur_us = 5;
      op.tid = 1;
      op.external_id = static_cast<int64_t>(i) + 100;
      op.input_dims = ops[i].second;
      t.cpu_ops.push_back(op);
      t.cpu_ops_by_external_id[op.external_id].push_back(t.cpu_ops.size() - 1);
    }
  }
  TracePlanGroups g;
  g.stated = true;
  g.model = {true, 1024, 16, 16, 64, 2816, 151936, true};
  const TraceMeasurement tm = measurement_from_traces({t}, g);
  const OpCategoryTimes& ops_s = tm.measurement.op_categories[0];
  CHECK(ops_s.forward_s[static_cast<size_t>(OpCategory::kGemmQkv)] == Approx(50e-6));
  CHECK(ops_s.forward_s[static_cast<size_t>(OpCategory::kGemmProj)] == Approx(50e-6));
  CHECK(ops_s.forward_s[static_cast<size_t>(OpCategory::kGemmFc1)] == Approx(50e-6));
  CHECK(ops_s.forward_s[static_cast<size_t>(OpCategory::kGemmFc2)] == Approx(50e-6));
  CHECK(tm.gemm_kernels == 4);
  CHECK(tm.gemm_kernels_by_role == 4);
}
