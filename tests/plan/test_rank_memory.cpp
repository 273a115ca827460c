// Memory per GPU against Korthikanti et al. 2022 Fig. 1 (parameters + gradients + optimizer,
// and activations, per GPU, for the paper's Table 3 configurations) and schedule invariants.
#include <catch2/catch.hpp>

#include "common/units.hpp"
#include "model/activation_memory.hpp"
#include "model/model_catalog.hpp"
#include "plan/rank_memory.hpp"

using namespace trainsim;

namespace {

struct Fig1Row {
  const char* model;
  int64_t pp, vpp, micro_batch, global_batch;
  double par_opt_gib;          // Fig. 1, "parameters + gradients + optimizer"
  double act_tp_gib;           // Fig. 1, tensor parallelism only (no recompute)
  double act_sp_selective_gib; // Fig. 1, sequence parallel + selective recompute
};

// Korthikanti Table 3 configurations (all TP 8, fp16); Fig. 1 values as tabulated in
// calculon-ai/calculon validation.py (seqsel_fig1), read from the paper's profile.
const Fig1Row kFig1[] = {
    {"megatron-22b", 1, 1, 4, 4, 45.5625, 59.25, 9.5625},
    {"gpt3-175b", 8, 3, 1, 64, 45.5625, 66.84375, 12.3515625},
    {"megatron-530b", 35, 3, 1, 280, 31.640625, 114.0234375, 23.076171875},
    {"megatron-1t", 64, 1, 1, 512, 32.958984375, 131.25, 26.5625},
};

ParallelPlan fig1_plan(const Fig1Row& row, bool sp_selective) {
  ParallelPlan p;
  p.tp = 8;
  p.pp = row.pp;
  p.vpp = row.vpp;
  p.schedule = row.vpp > 1 ? Schedule::kInterleaved : Schedule::k1F1B;
  p.micro_batch = row.micro_batch;
  p.global_batch = row.global_batch;
  p.precision = Precision::kFp16;
  p.attention = AttentionKernel::kUnfused;
  p.sequence_parallel = sp_selective;
  p.recompute = sp_selective ? Recompute::kSelective : Recompute::kNone;
  return p;
}

// Transformer-layer activations of the first stage (Fig. 1 leaves out the embedding's mask).
double first_stage_layer_activations(const ModelSpec& m, const ParallelPlan& p) {
  ActivationLayout l{p.micro_batch, p.tp, p.sequence_parallel, p.recompute, p.attention, 2};
  return activation_bytes_per_layer(m, l) * static_cast<double>(layers_on_stage(m, p, 0)) *
         in_flight_micro_batches(p, 0);
}

}  // namespace

TEST_CASE("Korthikanti Fig. 1: parameters, gradients and optimizer states per GPU") {
  for (const auto& row : kFig1) {
    INFO(row.model);
    const ModelSpec m = resolve_model(row.model);
    const ParallelPlan p = fig1_plan(row, false);
    REQUIRE(validate_plan(p, m, "test").empty());
    const RankMemory mem = estimate_rank_memory(m, p);
    // A middle stage holds transformer layers only, like the figure.
    const StageMemory& s = mem.stages[mem.stages.size() / 2];
    const double par_opt = bytes_to_gib(s.memory.weights_bytes + s.memory.gradients_bytes + s.memory.optimizer_bytes);
    if (row.pp > 1) {
      CHECK(par_opt == Approx(row.par_opt_gib).epsilon(0.005));
    } else {
      // With one stage the embedding (0.7 GiB of states) is on it too; the figure leaves it out.
      CHECK(par_opt == Approx(row.par_opt_gib).epsilon(0.02));
      CHECK(par_opt > row.par_opt_gib);
    }
  }
}

TEST_CASE("Korthikanti Fig. 1: activation memory per GPU, TP alone and SP + selective recompute") {
  for (const auto& row : kFig1) {
    INFO(row.model);
    const ModelSpec m = resolve_model(row.model);
    CHECK(bytes_to_gib(first_stage_layer_activations(m, fig1_plan(row, false))) ==
          Approx(row.act_tp_gib).epsilon(0.005));
    CHECK(bytes_to_gib(first_stage_layer_activations(m, fig1_plan(row, true))) ==
          Approx(row.act_sp_selective_gib).epsilon(0.005));
  }
}

TEST_CASE("1F1B keeps p - stage micro-batches in flight, GPipe all of them") {
  ParallelPlan p;
  p.pp = 4;
  p.global_batch = 16;  // 16 micro-batches
  for (int64_t stage = 0; stage < 4; ++stage) CHECK(in_flight_micro_batches(p, stage) == 4 - stage);
  p.global_batch = 2;  // fewer micro-batches than stages: bounded by m
  CHECK(in_flight_micro_batches(p, 0) == 2);
  p.schedule = Schedule::kGpipe;
  p.global_batch = 16;
  CHECK(in_flight_micro_batches(p, 3) == 16);
}

TEST_CASE("interleaving raises the first stage's in-flight activations by 1 + (p-1)/(p v)") {
  ParallelPlan p;
  p.schedule = Schedule::kInterleaved;
  p.global_batch = 64;
  for (int64_t pp : {2, 4, 8, 16}) {
    for (int64_t v : {2, 3, 4}) {
      p.pp = pp;
      p.vpp = v;
      const double expected = static_cast<double>(pp) * (1.0 + static_cast<double>(pp - 1) / static_cast<double>(pp * v));
      CHECK(in_flight_micro_batches(p, 0) == Approx(expected));
    }
  }
}

TEST_CASE("ZeRO stages shard optimizer, then gradients, then weights over dp") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  const MemoryBreakdown z0 = estimate_rank_memory(m, p).peak().memory;
  p.zero_stage = 1;
  const MemoryBreakdown z1 = estimate_rank_memory(m, p).peak().memory;
  p.zero_stage = 2;
  const MemoryBreakdown z2 = estimate_rank_memory(m, p).peak().memory;
  p.zero_stage = 3;
  const MemoryBreakdown z3 = estimate_rank_memory(m, p).peak().memory;
  CHECK(z1.optimizer_bytes == Approx(z0.optimizer_bytes / 8));
  CHECK(z1.gradients_bytes == z0.gradients_bytes);
  CHECK(z2.gradients_bytes == Approx(z0.gradients_bytes / 8));
  CHECK(z2.weights_bytes == z0.weights_bytes);
  CHECK(z3.weights_bytes == Approx(z0.weights_bytes / 8));
  CHECK(z3.other_bytes > 0);  // gathered layers
  CHECK(z0.activations_bytes == z3.activations_bytes);
  // 18 bytes per parameter unsharded (mixed-precision Adam with fp32 gradients).
  const double params = static_cast<double>(estimate_rank_memory(m, p).peak().params);
  CHECK(z0.weights_bytes + z0.gradients_bytes + z0.optimizer_bytes == Approx(18.0 * params));
}

TEST_CASE("stages split the layers, the first takes the remainder, and all layers are placed") {
  ModelSpec m = resolve_model("llama3-405b");  // 126 layers
  m.layers = 125;  // neither 125 nor 127 divides by 16
  ParallelPlan p;
  p.pp = 16;
  p.global_batch = 16;
  int64_t placed = 0;
  for (int64_t s = 0; s < p.pp; ++s) placed += layers_on_stage(m, p, s);
  CHECK(placed == m.layers);
  CHECK(layers_on_stage(m, p, 12) == 8);
  CHECK(layers_on_stage(m, p, 13) == 7);
}

TEST_CASE("context parallelism divides a rank's activations by cp and shards ZeRO over dp x cp") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p;
  p.dp = 2;
  p.global_batch = 2;
  p.zero_stage = 1;
  p.recompute = Recompute::kFull;
  ParallelPlan cp = p;
  cp.cp = 4;
  const StageMemory a = estimate_rank_memory(m, p).stages[0], b = estimate_rank_memory(m, cp).stages[0];
  CHECK(b.memory.activations_bytes == Approx(a.memory.activations_bytes / 4));
  CHECK(b.memory.optimizer_bytes == Approx(a.memory.optimizer_bytes / 4));
  CHECK(b.memory.weights_bytes == Approx(a.memory.weights_bytes));  // every CP rank holds the weights
}

TEST_CASE("DeepSpeed's ZeRO holds its gradient buckets beside the states: one of 5e8 16-bit elements, two with overlap_comm below stage 3") {
  const ModelSpec m = resolve_model("gpt3-1.3b");
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  p.zero_stage = 1;
  const double megatron = estimate_rank_memory(m, p).peak().memory.other_bytes;
  CHECK(deepspeed_bucket_bytes(p) == 0);
  p.zero_engine = ZeroEngine::kDeepSpeed;
  p.dp_overlap = false;
  CHECK(deepspeed_bucket_bytes(p) == 1e9);
  CHECK(estimate_rank_memory(m, p).peak().memory.other_bytes == Approx(megatron + 1e9));
  p.dp_overlap = true;
  CHECK(deepspeed_bucket_bytes(p) == 2e9);  // overlap_comm swaps two buckets
  p.pp = 2;
  p.dp = 4;
  CHECK(deepspeed_bucket_bytes(p) == 1e9);  // the pipeline engine appends one in reduce_gradients
  p.pp = 1;
  p.dp = 8;
  p.zero_stage = 3;
  CHECK(deepspeed_bucket_bytes(p) == 1e9);  // stage3.py: one
  p.zero_stage = 0;
  CHECK(deepspeed_bucket_bytes(p) == 0);    // no ZeRO optimizer
  p.zero_stage = 2;
  p.precision = Precision::kFp32;
  CHECK(deepspeed_bucket_bytes(p) == 4e9);
}

TEST_CASE("quantized weights: Transformer Engine's cached copies, FP8 primary weights in their place, by GPU") {
  ParallelPlan p;
  const MemoryTarget hopper, blackwell{false};
  CHECK(layer_weight_bytes_per_param(p, hopper) == 2.0);  // bf16
  p.precision = Precision::kFp8;
  CHECK(layer_weight_bytes_per_param(p, hopper) == 4.0);     // bf16 + FP8 rows + FP8 transposed copy
  CHECK(layer_weight_bytes_per_param(p, blackwell) == 3.0);  // no transposed copy: any layout
  p.fp8_params = true;
  CHECK(layer_weight_bytes_per_param(p, hopper) == 2.0);  // FP8 primary weights and their transpose
  CHECK(layer_weight_bytes_per_param(p, blackwell) == 1.0);
  p.fp8_params = false;
  p.fp8_recipe = Fp8Recipe::kBlockwise;  // both layouts on their own 128 x 128 blocks, any GPU
  CHECK(layer_weight_bytes_per_param(p, blackwell) == Approx(2.0 + 2.0 * (1.0 + 4.0 / 128.0)));
  p.fp8_recipe = Fp8Recipe::kTensorwise;
  p.torchao_float8 = true;  // torchao casts each time and keeps no copy
  CHECK(layer_weight_bytes_per_param(p, hopper) == 2.0);
  p.torchao_float8 = false;
  p.precision = Precision::kMxfp8;
  CHECK(layer_weight_bytes_per_param(p, blackwell) == Approx(2.0 + 2.0 * (1.0 + 1.0 / 32.0)));
  p.fp8_params = true;
  CHECK(layer_weight_bytes_per_param(p, blackwell) == Approx(2.0 * (1.0 + 1.0 / 32.0)));
  p.precision = Precision::kNvfp4;
  p.fp8_params = false;
  CHECK(layer_weight_bytes_per_param(p, blackwell) == Approx(2.0 + 2.0 * 0.5625));
  p.zero_stage = 3;  // ZeRO-3's sharded weights: counted as 16-bit
  CHECK(layer_weight_bytes_per_param(p, blackwell) == 2.0);
}

TEST_CASE("gradients reduced in bf16 take half the fp32 buffer, fp32 training keeps 4 bytes") {
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  const RankMemory fp32_grads = estimate_rank_memory(m, p);
  p.grad_reduce_in_fp32 = false;
  const RankMemory bf16_grads = estimate_rank_memory(m, p);
  CHECK(bf16_grads.peak().memory.gradients_bytes == Approx(fp32_grads.peak().memory.gradients_bytes / 2));
  CHECK(state_bytes_per_param(p).gradients == 2.0);
  p.precision = Precision::kFp32;
  CHECK(state_bytes_per_param(p).gradients == 4.0);
}
