// The CUDA runtime (runtime/cuda/): what it refuses (runs anywhere), and its device memory
// accounting and parameter layout (need a GPU: skipped with a warning without one). Loss parity
// with the CPU backend is tests/runtime_gpu/parity.sh (under mpirun).
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME

#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <string>

#include "common/errors.hpp"
#include "model/model_catalog.hpp"
#include "runtime/cuda/cuda_trainer.hpp"
#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/param_store.hpp"

namespace trainsim {
namespace {

bool have_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" status
    return false;
  }
  return true;
}

std::string refusal(const ModelSpec& m, const ParallelPlan& p, int ranks, const cpu::RunOptions& o = {}) {
  try {
    cuda::check_cuda_plan(m, p, ranks, o);
  } catch (const InputError& e) {
    std::string all;
    for (const std::string& problem : e.problems()) all += problem + "\n";
    return all;
  }
  return "";
}

TEST_CASE("the CUDA runtime refuses an fp32 plan, naming the precision key and bf16", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  ParallelPlan p;
  p.precision = Precision::kFp32;
  const std::string message = refusal(m, p, 1);
  CHECK_THAT(message, Catch::Contains("precision fp32"));
  CHECK_THAT(message, Catch::Contains("--precision bf16"));
  p.precision = Precision::kBf16;
  CHECK(refusal(m, p, 1).empty());
}

TEST_CASE("the CUDA runtime reports every unsupported key at once", "[cuda_runtime]") {
  ModelSpec m = resolve_model("gpt-tiny");
  m.ffn_kind = FfnKind::kSwiglu;
  m.kv_heads = 2;
  ParallelPlan p;
  p.dp = 2;
  p.zero_stage = 3;
  p.attention = AttentionKernel::kUnfused;
  cpu::RunOptions o;
  o.checkpoint_every = 5;
  const std::string message = refusal(m, p, 4, o);
  CHECK_THAT(message, Catch::Contains("ffn_kind"));
  CHECK_THAT(message, Catch::Contains("kv_heads 2"));
  CHECK_THAT(message, Catch::Contains("zero_stage 3"));
  CHECK_THAT(message, Catch::Contains("attention unfused"));
  CHECK_THAT(message, Catch::Contains("mpirun started 4"));
  CHECK_THAT(message, Catch::Contains("--checkpoint-every"));
}

TEST_CASE("the device arena's peak is the largest sum of live buffers", "[cuda_runtime]") {
  if (!have_gpu()) {
    WARN("no CUDA GPU: device arena test skipped");
    return;
  }
  cuda::DeviceArena arena;
  {
    cuda::DeviceBuffer<float> a(arena, 1000, "a");
    {
      cuda::DeviceBuffer<double> b(arena, 500, "b");
      CHECK(arena.current_bytes() == 8000);
    }
    cuda::DeviceBuffer<char> c(arena, 100, "c");
    CHECK(arena.current_bytes() == 4100);
  }
  CHECK(arena.current_bytes() == 0);
  CHECK(arena.peak_bytes() == 8000);
  arena.sample_device();
  CHECK(arena.device_total_bytes() > 0);
}

TEST_CASE("a GPU stage's tensors are 256-byte aligned, layers contiguous, padding a multiple of the shards", "[cuda_runtime]") {
  if (!have_gpu()) {
    WARN("no CUDA GPU: parameter layout test skipped");
    return;
  }
  const ModelSpec m = resolve_model("gpt-tiny");
  cpu::StageLayout layout;
  layout.last_layer = m.layers;
  layout.embedding = layout.head = true;
  cpu::StageModel host(m, layout, 3);
  cuda::DeviceArena arena;
  cuda::ParamStore store(host, 4, arena, nullptr);
  CHECK(store.padded_count() % (4 * cuda::ParamStore::kAlignElements) == 0);
  CHECK(store.views().size() == host.params().size());
  CHECK(store.views().front().name == "wte");
  for (const cuda::ParamView& v : store.views()) CHECK(v.offset % cuda::ParamStore::kAlignElements == 0);
  REQUIRE(store.layer_count() == m.layers);
  for (int64_t l = 1; l < m.layers; ++l) CHECK(store.layer_range(l).first >= store.layer_range(l - 1).second);
  CHECK(arena.peak_bytes() >= static_cast<size_t>(store.padded_count()) * 6);  // bf16 weights + fp32 grads
}

}  // namespace
}  // namespace trainsim

#endif  // TRAINSIM_HAVE_CUDA_RUNTIME
