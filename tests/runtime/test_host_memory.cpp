// The CPU runtime's host-memory refusal: plans that certainly do not fit are refused with the
// figures, the rest go ahead.
#include <catch2/catch.hpp>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "model/model_catalog.hpp"
#include "runtime/cpu/trainer.hpp"

using namespace trainsim;

namespace {
ParallelPlan fp32_plan() {
  ParallelPlan p;
  p.precision = Precision::kFp32;
  p.attention = AttentionKernel::kUnfused;
  return p;
}
}  // namespace

TEST_CASE("a toy model fits in a GiB, an 8B model in fp32 needs over 100 GiB and is refused with the figures") {
  CHECK_NOTHROW(cpu::check_host_memory(resolve_model("gpt-tiny"), fp32_plan(), 4, gib_to_bytes(1)));
  ModelSpec llama = resolve_model("llama3-8b");
  llama.seq_len = 1024;
  try {
    cpu::check_host_memory(llama, fp32_plan(), 1, gib_to_bytes(100));
    FAIL("not refused");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("1 rank(s) on this host need at least"));
    CHECK_THAT(e.what(), Catch::Contains("only 100.0 GiB is available"));
  }
}

TEST_CASE("ranks on one host add up") {
  const ModelSpec m = resolve_model("gpt2-124m");
  ParallelPlan p = fp32_plan();
  p.dp = 8;
  p.global_batch = 8;
  // 124M parameters x 16 bytes is ~1.9 GB per rank before activations: 8 ranks need over 14 GiB.
  CHECK_NOTHROW(cpu::check_host_memory(m, p, 1, gib_to_bytes(14)));
  CHECK_THROWS_AS(cpu::check_host_memory(m, p, 8, gib_to_bytes(14)), InputError);
}
