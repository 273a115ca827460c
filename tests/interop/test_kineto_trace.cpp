// The Kineto trace reader and summary: interval union and exposed communication on tiny
// synthetic traces (tests/data/traces/two_streams.json: a GEMM and an elementwise kernel on
// stream 7, an NCCL all-reduce on stream 20 half under the GEMM, a flash kernel launched after
// the step; tests/data/traces/rocm_mi300x.json: a two-step MI300X trace written in the ROCm
// profiler's format, with RCCL, memcpy and memset), kernel categories by name, and the reader's
// refusals.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "interop/kineto_calibration.hpp"
#include "interop/kineto_summary.hpp"
#include "interop/kineto_trace.hpp"

using namespace trainsim;

namespace {
std::string trace_path(const std::string& name) { return std::string(TRAINSIM_TEST_DATA) + "/traces/" + name; }
}  // namespace

TEST_CASE("merge_intervals joins overlapping and touching intervals, the union is not the sum") {
  const auto m = merge_intervals({{10, 30}, {20, 40}, {40, 45}, {100, 110}});
  REQUIRE(m.size() == 2);
  CHECK(m[0] == Interval{10, 45});
  CHECK(m[1] == Interval{100, 110});
  CHECK(total_length(m) == Approx(45));
}

TEST_CASE("uncovered_length: the part of a not under b") {
  CHECK(uncovered_length({{20, 40}}, {{10, 30}, {35, 45}}) == Approx(5));
  CHECK(uncovered_length({{20, 40}}, {}) == Approx(20));
  CHECK(uncovered_length({{20, 40}}, {{0, 100}}) == Approx(0));
  CHECK(uncovered_length({{0, 10}, {20, 30}}, {{5, 25}}) == Approx(10));
}

TEST_CASE("kernel_category places kernels by name") {
  CHECK(kernel_category("sm90_xmma_gemm_bf16bf16_bf16f32") == "gemm");
  CHECK(kernel_category("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "nccl_allreduce");
  CHECK(kernel_category("ncclKernel_AllGather_RING_LL_Sum_int8_t") == "nccl_allgather");
  CHECK(kernel_category("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == "nccl_reducescatter");
  CHECK(kernel_category("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") == "nccl_sendrecv");
  CHECK(kernel_category("void dpsk::ep::internode::dispatch<false, 8, true, 8>") == "deepep_dispatch");
  CHECK(kernel_category("void dpsk::ep::internode::combine<false, 8>") == "deepep_combine");
  CHECK(kernel_category("flash_fwd_kernel") == "attention");
  CHECK(kernel_category("void at::native::vectorized_elementwise_kernel<4, lambda>") == "elementwise");
  CHECK(kernel_category("multi_tensor_apply_kernel<AdamFunctor<float>>") == "optimizer");
  CHECK(kernel_category("triton__0d1d2d") == "other");
  CHECK(is_comm_category("nccl_allreduce"));
  CHECK_FALSE(is_comm_category("gemm"));
  CHECK(kernel_category("void at::native::memcpy_kernel<float>") == "elementwise");  // a kernel, not a memcpy event
}

TEST_CASE("kernel_category places ROCm kernels: Tensile GEMMs, MIOpen and CK convolutions, CK attention, RCCL") {
  // Names as the PyTorch profiler records them on MI300X / MI210 (docs/trace.md).
  CHECK(kernel_category("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT96x96x128_MI16x16x1_SN_LDSB1_AFC1_AG0") == "gemm");
  CHECK(kernel_category("Cijk_Ailk_Bljk_BBS_BH_MT128x64x64_MI32x32x8x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE") == "gemm");
  CHECK(kernel_category("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8") == "conv");
  CHECK(kernel_category("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16") == "conv");
  CHECK(kernel_category("_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3INS_"
                        "34GridwiseGemmMultiD") == "conv");
  CHECK(kernel_category("void ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<P> >(ck_tile::FmhaFwdKernelArgs)") == "attention");
  CHECK(kernel_category("attn_fwd") == "attention");
  CHECK(kernel_category("void ck_tile::kentry<256, 1, ck_tile::Rmsnorm2dFwd<P> >(ck_tile::Rmsnorm2dFwdHostArgs)") == "norm");
  CHECK(kernel_category("void (anonymous namespace)::groupnorm_kernel_dispatch_up<__hip_bfloat16, 1024u>") == "norm");
  CHECK(kernel_category("batched_transpose_32x32_half") == "elementwise");
  CHECK(kernel_category("SubTensorOpWithScalar1d") == "elementwise");
  CHECK(kernel_category("ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)") == "nccl_other");
  CHECK(kernel_category("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)") == "nccl_sendrecv");
}

TEST_CASE("the two-stream trace: busy is the union, exposed comm is what no compute covers") {
  for (const char* name : {"two_streams.json", "two_streams.json.gz"}) {
    const KinetoTrace t = read_kineto_trace(trace_path(name));
    CHECK(t.device_name == "Test GPU");
    REQUIRE(t.kernels.size() == 4);
    REQUIRE(t.steps.size() == 1);
    const TraceSummary s = summarize_trace(t);
    CHECK(s.all.kernels == 4);
    CHECK(s.all.busy_us == Approx(45));  // [10,45] + [100,110]; the sum would be 60
    CHECK(s.all.comm_us == Approx(20));
    CHECK(s.all.exposed_comm_us == Approx(5));  // [30,35]
    CHECK(s.span_us == Approx(100));
    REQUIRE(s.steps.size() == 1);
    CHECK(s.steps[0].k.kernels == 3);  // the flash kernel was launched after the step's CPU span
    CHECK(s.steps[0].k.busy_us == Approx(35));
    CHECK(s.steps[0].cpu_us == Approx(40));
    CHECK(s.steps[0].wall_us == Approx(45));  // the CPU span (40) extended to its last kernel's end
    CHECK(s.categories.at("gemm").kernels == 1);
    CHECK(s.annotations.at("fwd").count == 2);
    CHECK(s.annotations.at("fwd").time_us == Approx(40));  // a sum of spans
    CHECK(s.annotations.count("attn(F)") == 0);  // on the CPU pid: a CPU annotation
    CHECK(s.cpu_annotations.at("attn(F)").count == 1);
    CHECK(s.cpu_annotations.count("ProfilerStep#1") == 0);
  }
}

TEST_CASE("a ROCm trace: hip launches, Tensile / CK / MIOpen kernels, RCCL on its own stream, memcpy and memset") {
  const KinetoTrace t = read_kineto_trace(trace_path("rocm_mi300x.json"));
  CHECK(t.device_name == "AMD Instinct MI300X");
  REQUIRE(t.kernels.size() == 11);
  CHECK(t.memcpys.size() == 1);
  CHECK(t.memsets.size() == 1);
  REQUIRE(t.steps.size() == 2);  // user_annotation ProfilerStep#N on the CPU pid
  CHECK(t.launch_ts_us.size() == 13);  // hipLaunchKernel, hipExtModuleLaunchKernel, hipModuleLaunchKernel, hipMemcpyWithStream
  const TraceSummary s = summarize_trace(t);
  CHECK(s.all.kernels == 11);  // memcpy and memset are not kernels
  // [1000,1250]: the GEMM, the CK attention, the RCCL kernel [1150,1250] and the memcpy inside;
  // [1300,1425]: attn_fwd through the layer norm, then the memset [1420,1425]. Kernels alone: 370.
  CHECK(s.all.busy_us == Approx(375));
  CHECK(s.all.comm_us == Approx(100));
  CHECK(s.all.exposed_comm_us == Approx(80));  // compute covers [1160,1180]; the memcpy is not compute
  CHECK(s.span_us == Approx(425));
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].name == "ProfilerStep#3");
  CHECK(s.steps[0].k.kernels == 5);
  CHECK(s.steps[0].k.busy_us == Approx(250));
  CHECK(s.steps[1].k.kernels == 6);
  CHECK(s.steps[1].k.busy_us == Approx(125));  // the memset's 5 us included
  const auto cat = [&](const char* name) { return s.categories.at(name); };
  CHECK(cat("gemm").kernels == 2);
  CHECK(cat("gemm").time_us == Approx(135));
  CHECK(cat("attention").kernels == 2);
  CHECK(cat("attention").time_us == Approx(90));
  CHECK(cat("norm").kernels == 2);
  CHECK(cat("elementwise").kernels == 2);
  CHECK(cat("activation").kernels == 1);
  CHECK(cat("conv").kernels == 1);
  CHECK(cat("nccl_other").kernels == 1);
  CHECK(cat("memcpy").kernels == 0);
  CHECK(cat("memcpy").memory_ops == 1);
  CHECK(cat("memcpy").time_us == Approx(5));
  CHECK(cat("memset").memory_ops == 1);
  CHECK(s.categories.count("other") == 0);
  CHECK(s.annotations.at("ProfilerStep#3").count == 1);
  CHECK(s.cpu_annotations.at("attention").count == 1);
}

TEST_CASE("the reader refuses a missing file, a truncated gzip and a damaged kernel") {
  CHECK_THROWS_AS(read_kineto_trace(trace_path("no_such_trace.json")), InputError);
  CHECK_THROWS_WITH(read_kineto_trace(trace_path("truncated.json.gz")),
                    Catch::Contains("truncated"));
}

// tests/data/traces/shapes.json: an addmm launched from inside aten::linear (the launch carries the
// addmm's External id; the kernel has none), an aten::mm nested in an aten::matmul that shares its
// External id, an aten::cat with a tensor-list input, an older-style `Kernel` with its own External
// id tied to an `Operator`, a relu no kernel references, a kernel with no launch at all, and an
// addmm whose launch numbers its External id as its correlation (older traces): tied by nesting.
TEST_CASE("kernels are tied to the CPU op that launched them, with its input shapes") {
  const KinetoTrace t = read_kineto_trace(trace_path("shapes.json"));
  REQUIRE(t.kernels.size() == 6);
  const TraceKernel& gemm = t.kernels[0];
  CHECK(gemm.external_id == 11);  // from its launch
  CHECK(gemm.launch_tid == 100);
  const TraceCpuOp* addmm = launching_cpu_op(t, gemm);
  REQUIRE(addmm != nullptr);
  CHECK(addmm->name == "aten::addmm");
  CHECK(addmm->input_dims == std::vector<std::vector<int64_t>>{{1024}, {8, 64}, {64, 1024}, {}, {}});
  CHECK(addmm->input_types == std::vector<std::string>{"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"});

  const TraceCpuOp* cat = launching_cpu_op(t, t.kernels[1]);
  REQUIRE(cat != nullptr);
  CHECK(cat->name == "aten::cat");
  CHECK(cat->input_dims == std::vector<std::vector<int64_t>>{{}, {}});  // a tensor list's dims are not kept

  const TraceCpuOp* mm = launching_cpu_op(t, t.kernels[2]);  // aten::matmul shares External id 12
  REQUIRE(mm != nullptr);
  CHECK(mm->name == "aten::mm");  // the innermost op around the launch
  CHECK(mm->input_dims == std::vector<std::vector<int64_t>>{{32, 16}, {16, 32}});

  const TraceCpuOp* bmm = launching_cpu_op(t, t.kernels[3]);  // `Kernel` with its own External id, no launch
  REQUIRE(bmm != nullptr);
  CHECK(t.kernels[3].launch_tid == -1);
  CHECK(bmm->name == "aten::bmm");
  CHECK(bmm->input_types == std::vector<std::string>{"c10::Half", "c10::Half"});

  CHECK(launching_cpu_op(t, t.kernels[4]) == nullptr);  // no launch, no External id
  CHECK(t.kernels[4].external_id == -1);
  const TraceKernel& sgemm = t.kernels[5];  // External id 20: no op has it; the addmm around its launch
  CHECK(sgemm.external_id == 20);
  const TraceCpuOp* nested = launching_cpu_op(t, sgemm);
  REQUIRE(nested != nullptr);
  CHECK(nested->external_id == 16);
  CHECK(nested->input_dims == std::vector<std::vector<int64_t>>{{16}, {4, 8}, {8, 16}, {}, {}});
  // Only referenced ops are kept: linear (10) and relu (14) launched nothing.
  CHECK(t.cpu_ops.size() == 6);  // addmm, cat, matmul, mm, bmm, addmm
  CHECK(t.cpu_ops_by_external_id.count(10) == 0);
  CHECK(t.cpu_ops_by_external_id.count(14) == 0);
  CHECK(t.cpu_ops_by_external_id.at(12).size() == 2);
}

// The public Qwen1.5-0.5B forward on H100 (../shared/traces; the test passes vacuously where that
// folder is absent): batch 16 x 559 tokens, hidden 1024, FFN 2816. Its first profiler step's
// launches predate the CPU recording, so only the second step's GEMMs can be tied to an op.
TEST_CASE("on the Qwen1.5-0.5B H100 trace, GEMM kernels link to aten::mm / addmm with their shapes") {
  const std::string path = std::string(TRAINSIM_PUBLIC_TRACES) + "/h100-qwen1.5-0.5b-forward.json.gz";
  if (!std::ifstream(path).good()) {
    WARN("not found: " << path << " (the public traces); skipped");
    return;
  }
  const KinetoTrace t = read_kineto_trace(path);
  int gemms = 0, linked = 0;
  std::map<std::string, int> shapes;  // "op MxK KxN" -> kernels
  for (const TraceKernel& k : t.kernels) {
    if (kernel_category(k.name) != "gemm") continue;
    ++gemms;
    const TraceCpuOp* op = launching_cpu_op(t, k);
    if (op == nullptr || op->input_dims.empty()) continue;
    ++linked;
    const bool addmm = op->name == "aten::addmm";
    if (!addmm && op->name != "aten::mm") continue;
    const auto& a = op->input_dims[addmm ? 1 : 0];
    const auto& b = op->input_dims[addmm ? 2 : 1];
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    CHECK(a[1] == b[0]);
    CHECK(op->input_types[addmm ? 1 : 0] == "c10::BFloat16");
    shapes[op->name + " " + std::to_string(a[0]) + "x" + std::to_string(a[1]) + " " + std::to_string(b[0]) + "x" +
           std::to_string(b[1])] += 1;
  }
  CHECK(gemms == 242);
  CHECK(linked == 169);  // 168 linear layers (24 x q/k/v, o, gate, up, down) + the rotary bmm
  CHECK(shapes["aten::addmm 8944x1024 1024x1024"] == 72);  // q, k, v with bias
  CHECK(shapes["aten::mm 8944x1024 1024x1024"] == 24);     // o_proj
  CHECK(shapes["aten::mm 8944x1024 1024x2816"] == 48);     // gate, up
  CHECK(shapes["aten::mm 8944x2816 2816x1024"] == 24);     // down
  CHECK(t.cpu_ops.size() <= t.kernels.size() * 2);  // only the referenced ops are kept
}

TEST_CASE("gemm_shape_of reads (m, n, k) and the dtype off a GEMM op's input dims") {
  OpGemmShape s;
  TraceCpuOp addmm{"aten::addmm", 0, 1, 1, 1, {{1024}, {8944, 1024}, {1024, 2816}, {}, {}}, {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"}};
  REQUIRE(gemm_shape_of(addmm, s));
  CHECK((s.m == 8944 && s.n == 2816 && s.k == 1024 && s.dtype == "bf16"));
  TraceCpuOp bmm{"aten::bmm", 0, 1, 1, 2, {{4, 32, 64}, {4, 64, 16}}, {"c10::Half", "c10::Half"}};
  REQUIRE(gemm_shape_of(bmm, s));
  CHECK((s.m == 128 && s.n == 16 && s.k == 64 && s.dtype == "fp16"));
  TraceCpuOp linear{"aten::linear", 0, 1, 1, 3, {{2, 8, 64}, {256, 64}, {256}}, {"float", "float", "float"}};
  REQUIRE(gemm_shape_of(linear, s));
  CHECK((s.m == 16 && s.n == 256 && s.k == 64 && s.dtype == "fp32"));
  TraceCpuOp mismatched{"aten::mm", 0, 1, 1, 4, {{8, 64}, {32, 16}}, {"float", "float"}};
  CHECK_FALSE(gemm_shape_of(mismatched, s));
  TraceCpuOp relu{"aten::relu", 0, 1, 1, 5, {{8, 64}}, {"float"}};
  CHECK_FALSE(gemm_shape_of(relu, s));
  TraceCpuOp no_shapes{"aten::mm", 0, 1, 1, 6, {}, {}};
  CHECK_FALSE(gemm_shape_of(no_shapes, s));
}

TEST_CASE("calibrate_from_traces: a partial profile of the measured GEMM shapes, with the trace's hash") {
  const TraceCalibration c = calibrate_from_traces({trace_path("shapes.json")});
  CHECK(c.profile.partial);
  CHECK(c.profile.provenance.device == "Test GPU");
  CHECK(c.profile.provenance.sm_count == 132);  // deviceProperties[0].numSms
  REQUIRE(c.profile.provenance.traces.size() == 1);
  CHECK(c.profile.provenance.traces[0].fnv1a64.size() == 16);
  CHECK(c.gemm_kernels == 4);  // the bf16 addmm's, the fp32 mm's and addmm's, the fp16 bmm's
  CHECK(c.gemm_kernels_with_shape == 4);
  REQUIRE(c.profile.gemm_shapes.size() == 3);  // one table per dtype
  for (const GemmShapeTable& t : c.profile.gemm_shapes) {
    REQUIRE(t.points.size() == (t.dtype == "fp32" ? 2u : 1u));  // fp32: 4x16x8 (nested launch), 32x32x16
    const GemmShapePoint& p = t.points.back();
    if (t.dtype == "bf16") CHECK((p.m == 8 && p.n == 1024 && p.k == 64 && p.timing.median_s == Approx(30e-6)));
    else if (t.dtype == "fp32") CHECK((p.m == 32 && p.n == 32 && p.k == 16 && p.timing.median_s == Approx(10e-6)));
    else CHECK((t.dtype == "fp16" && p.m == 8 && p.n == 4 && p.k == 8 && p.timing.median_s == Approx(5e-6)));
  }
  // A trace without shapes: refused (the hint asks for record_shapes=True).
  CHECK_THROWS_WITH(calibrate_from_traces({trace_path("two_streams.json")}), Catch::Contains("no GEMM kernel could be tied to an input shape"));
}

TEST_CASE("attention_shape_of reads batch x heads, sequence, head dim and is_causal off a flash op") {
  OpAttentionShape a;
  TraceCpuOp fwd{"aten::_flash_attention_forward", 0, 1, 1, 1,
                 {{16, 559, 16, 64}, {16, 559, 16, 64}, {16, 559, 16, 64}, {}, {}, {}, {}, {}, {}, {}, {}},
                 {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"},
                 {"", "", "", "", "", "559", "559", "0.", "True", "False", "0.125"}};
  REQUIRE(attention_shape_of(fwd, a));
  CHECK((a.batch_heads == 256 && a.seq == 559 && a.head_dim == 64 && a.causal && !a.backward && a.dtype == "bf16"));
  TraceCpuOp sdpa{"aten::_scaled_dot_product_flash_attention", 0, 1, 1, 2, {{2, 8, 1024, 128}, {2, 8, 1024, 128}, {2, 8, 1024, 128}, {}, {}},
                  {"c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"}, {"", "", "", "0.", "False"}};
  REQUIRE(attention_shape_of(sdpa, a));
  CHECK((a.batch_heads == 16 && a.seq == 1024 && a.head_dim == 128 && !a.causal && a.dtype == "fp16"));
  TraceCpuOp no_concrete = fwd;
  no_concrete.concrete_inputs.clear();  // is_causal unknown: no point rather than a guess
  CHECK_FALSE(attention_shape_of(no_concrete, a));
}
