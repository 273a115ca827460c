// The Kineto trace reader and summary: interval union and exposed communication on tiny
// synthetic traces (tests/data/traces/two_streams.json: a GEMM and an elementwise kernel on
// stream 7, an NCCL all-reduce on stream 20 half under the GEMM, a flash kernel launched after
// the step), kernel categories by name, and the reader's refusals.
#include <catch2/catch.hpp>

#include <string>

#include "common/errors.hpp"
#include "interop/kineto_summary.hpp"
#include "interop/kineto_trace.hpp"

using namespace trainsim;

namespace {
std::string trace_path(const std::string& name) { return std::string(TRAINSIM_TEST_DATA) + "/traces/" + name; }
}  // namespace

TEST_CASE("merge_intervals joins overlapping and touching intervals; the union is not the sum") {
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

TEST_CASE("the reader refuses a missing file, a truncated gzip and a damaged kernel") {
  CHECK_THROWS_AS(read_kineto_trace(trace_path("no_such_trace.json")), InputError);
  CHECK_THROWS_WITH(read_kineto_trace(trace_path("truncated.json.gz")),
                    Catch::Contains("truncated"));
}
