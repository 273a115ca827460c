// ZeRO-3's collective calls per layer: one of each with FSDP units, DeepSpeed's prefetch and
// reduce buckets otherwise (plan/zero3_collectives.hpp).
#include <catch2/catch.hpp>

#include "model/model_catalog.hpp"
#include "plan/zero3_collectives.hpp"

using namespace trainsim;

namespace {
ParallelPlan deepspeed(int64_t tp = 1) {
  ParallelPlan p;
  p.zero_stage = 3;
  p.tp = tp;
  p.zero3_collectives = Zero3Collectives::kDeepSpeed;
  return p;
}
}  // namespace

TEST_CASE("FSDP units gather and reduce a layer in one call each", "[zero3]") {
  ParallelPlan p;
  p.zero_stage = 3;
  const Zero3Calls calls = zero3_calls(resolve_model("gpt3-13b"), p);
  CHECK(calls.gathers_per_layer == 1.0);
  CHECK(calls.reduces_per_layer == 1.0);
}

TEST_CASE("DeepSpeed gathers module by module once a module fills the prefetch bucket", "[zero3]") {
  // GPT-3 13B (h 5140, GELU): query_key_value 79.3 M elements fills the 5e7 bucket alone; dense
  // (26.4 M) rides with dense_h_to_4h (105.7 M); dense_4h_to_h alone: 3 calls per layer. Its
  // 317 M elements fill 0.63 of a 5e8 reduce bucket.
  const Zero3Calls gpt = zero3_calls(resolve_model("gpt3-13b"), deepspeed());
  CHECK(gpt.gathers_per_layer == Approx(3.0));
  CHECK(gpt.reduces_per_layer == Approx(4.0 * 5140.0 * 5140.0 * 3.0 / 5e8).epsilon(0.01));
  // Llama 3 70B as Hugging Face writes it: q (67 M); k, v and o together; gate, up, down: 5.
  CHECK(zero3_calls(resolve_model("llama3-70b"), deepspeed()).gathers_per_layer == Approx(5.0));
}

TEST_CASE("DeepSpeed packs small modules of several layers into one call", "[zero3]") {
  // GPT-3 1.3B: a layer's four modules hold 50.3 M elements, one bucket per layer.
  CHECK(zero3_calls(resolve_model("gpt3-1.3b"), deepspeed()).gathers_per_layer == Approx(1.0));
  // Split over 8 TP ranks a Llama 3 70B layer holds 107 M elements per rank (q 8.4, k and v 1.0,
  // o 8.4, gate, up and down 29.4 M): q..up close one bucket, down and the next layer's q..gate
  // the next: 1.5 calls per layer.
  CHECK(zero3_calls(resolve_model("llama3-70b"), deepspeed(8)).gathers_per_layer == Approx(1.5));
}
