// Accuracy on published runs (shared/validation, format v2) with the shipped constants. These
// bounds are the project's accuracy claims, pinned at the measured figure plus about a point: a
// change that makes any of them worse fails here (docs/validation.md has the tables).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/host_allocator.hpp"
#include "sim/validation.hpp"
#include "sim/validation_fit.hpp"
#include "sim/validation_pairs.hpp"

using namespace trainsim;

namespace {
const std::string kRuns = std::string(TRAINSIM_TEST_DATA) + "/validation/published-runs.json";

const std::vector<PublishedRun>& runs() {
  static const std::vector<PublishedRun> all = load_published_runs(kRuns);
  return all;
}

const ValidationResult& result() {
  static const ValidationResult v = validate_runs(runs(), CostModelChoice{});
  return v;
}

const ErrorSummary& group(const std::string& name) {
  for (const auto& g : result().groups) {
    if (g.name == name) return g;
  }
  FAIL("no group " << name);
  return result().all;
}
}  // namespace

TEST_CASE("every run of the version-2 file is read, those it cannot simulate are counted, not refused") {
  REQUIRE(runs().size() == 332);  // 337 before the public file's corrections of 2026-11-27 (the NeMo launcher 175B rows removed)
  CHECK(result().all.count + result().all.unsupported == 332);
  CHECK(result().all.count == 332);  // every run predicted (168 before CP, uneven stages, Zero Bubble, EP and FSDP + PP)
  for (const RunResult& r : result().runs) {
    INFO(r.run->id);
    CHECK(r.predicted == r.run->supported());
    if (!r.predicted) CHECK_FALSE(r.run->unsupported.empty());
  }
}

TEST_CASE("version-1 files are still read") {
  const auto v1 = load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/published-runs-v1.json");
  CHECK(v1.size() == 91);
  for (const PublishedRun& r : v1) CHECK(r.supported());
}

TEST_CASE("mean absolute error over the predicted runs: held-out half and all runs") {
  CHECK(result().held_out_half.mean_abs_error <= 0.087);  // measured 7.7% with the host side (session 22); 8.4% on the corrected file's 332 runs (2026-11-27); 9.2% with ZeRO-3 layer by layer (2026-11-27); 9.3% with attention by shape (session 9); 9.8% with torchtitan's pipeline micro-batches and row-wise Float8; 10.4% before (10.3% before FP8 casts) (2026-11-24 with TP comm overlap, all 337 runs; 7.9% before the 19 MoE and 6 FSDP + PP rows)
  CHECK(result().all.mean_abs_error <= 0.088);            // measured 7.8% with the host side (session 22); 8.2% on the corrected file's 332 runs; 8.9% with ZeRO-3 layer by layer (0.0889 -> 0.0886), and with attention by shape; 9.2% in session 8; 9.8% before session 8 (9.6% before FP8 casts) (7.5% on the 312 runs before MoE and FSDP + PP)
}

TEST_CASE("A100 Megatron-LM, Korthikanti, MosaicML and BLOOM groups are each within their bounds") {
  CHECK(group("megatron_sc21_table1").mean_abs_error <= 0.077);  // 6.7%
  CHECK(group("korthikanti_2022_table5").mean_abs_error <= 0.05);  // Calculon: 3.65% with hand-set efficiencies
  CHECK(group("korthikanti_2022_table5").max_abs_error <= 0.10);
  CHECK(group("mosaicml_llm_foundry_benchmarks").mean_abs_error <= 0.105);  // 9.5% since the GEMM fixed costs and the refit (2026-11-27: the attention fraction rose, its long-sequence rows +13..+24%); 5.0% before
  CHECK(group("bloom").max_abs_error <= 0.11);  // 10.0% since the refit of 2026-11-27 (7.9% before)
  CHECK(group("zero_bubble_pp_a100").mean_abs_error <= 0.068);  // 5.8%: 48 runs, ZB-1p/2p with 1F1B and 1F1B-I (the 14.6B 1F1B-I's +16%)
}

TEST_CASE("H100 and H200 groups, priced from H100/H200 reference measurements (never fitted on)") {
  CHECK(group("nemo_24_07_h100_fp8").mean_abs_error <= 0.039);  // 2.9% (6.2% before FP8 casts; its GPT-3 5B row +16% -> +6.5%)
  CHECK(group("megatron_bridge_h100_fp8").mean_abs_error <= 0.101);  // 8.4% with ZeRO-3 layer by layer (its Megatron FSDP 8B rows; 8.7% before); 9.1%: 6 runs with the 405B CP rows (6.6% before FP8 casts: Llama 8B/70B -8..-11% -> -10..-16%)
  CHECK(group("dgxc_h100_llama31_70b").mean_abs_error <= 0.061);  // 5.1%: 36 runs with the CP2 rows (TP comm overlap from the NeMo recipe)
  CHECK(group("dgxc_h100_llama31_8b").mean_abs_error <= 0.07);   // 5.9% since the GEMM fixed costs and the refit (2026-11-27); 9.8%: 30 runs, context parallelism (7.1% before FP8 casts: FP8 rows -5 -> -11%)
  CHECK(group("dgxc_h100_llama31_405b").mean_abs_error <= 0.076); // 6.6%: 38 runs (5.9% before FP8 casts, 7.8% before TP comm overlap)
  CHECK(group("dgxc_h100_gpt3_175b").mean_abs_error <= 0.098);    // 8.8% with attention by shape, 9.2% before (12.1% before FP8 casts; every row states tp_comm_overlap)
  CHECK(group("megatron_bridge_h100_archive").mean_abs_error <= 0.16);  // 15.0% with GPT-OSS as Megatron-Core runs it and the host's synchronisations (session 30: the eager clamp around its experts' GLU and its host synchronisation, YaRN's unfused RoPE: GPT-OSS +28..+32% -> +6..+9%; Qwen3-30B EP16 +16..+18% -> +14..+16%); 20.2% with Megatron-Core's per-expert bias loop (session 23: GPT-OSS +44..+48% -> +28..+32%); 23.4% with the host side (session 22: Transformer Engine's 131 us per op and 33 us per expert GEMM; Qwen3-30B EP16 +40 -> +16..+18%); 32.6% with the Megatron-Bridge recipes' dispatcher, EP overlap and recomputation by layout (2026-11-28: Qwen3-235B -26..-31% -> -5..+1%, DeepSeek-V3 -39 -> +21%, Qwen3-30B EP16 -27 -> +41%, the 25.09 235B row -8 -> +27%); 33.6% with NCCL's all-to-all at its measured 0.743 of the NIC (2026-11-28; 29.7% before: its rows state neither the recipes' a2a overlap nor HybridEP, so EP across nodes runs exposed: Qwen3-235B -14..-20% -> -25..-31%); 29.8% with attention by shape (31.1% before): 26 runs, 19 MoE (GPT-OSS +37..+62%, Qwen3-30B at PP2 x EP8 +52..+170%; 8.3% on the 7 dense)
  CHECK(group("torchtitan").mean_abs_error <= 0.10);  // 9.3% since the GEMM fixed costs and the refit (2026-11-27); 7.2% with ZeRO-3 layer by layer (2026-11-27); 7.4% with attention by shape (the long-sequence CP rows); 9.5%: 8 pipeline micro-batches on the 405B FSDP + PP rows (15.6 -> 13.0%), torchao's row-wise table (13.0 -> 9.5%); 15.6% (14.7% before FP8 casts, priced as Transformer Engine's for torchao's Float8) (async TP rows: the gain over vanilla TP predicted 1.5x too large): 30 H100 96GB runs (assumed peak; the 405B FSDP + PP rows +52/+73%) and 2 H200
}

TEST_CASE("Korthikanti Table 5: sequence parallel + selective recompute beats full recompute for every model") {
  std::map<std::string, double> predicted;
  for (const RunResult& r : result().runs) predicted[r.run->id] = r.predicted_tokens_per_s_per_gpu;
  for (const char* size : {"22B", "175B", "530B", "1T"}) {
    INFO(size);
    const std::string base = std::string("korthikanti-t5-") + size;
    CHECK(predicted.at(base + "-seqsel") > predicted.at(base + "-full"));
  }
}

TEST_CASE("five published runs that trained are predicted not to fit in memory") {
  // The known misses (docs/cost-model.md "What must fit"): Nemotron-340B (NeMo 24.07, the record
  // states no recompute) and GPT-OSS-120B at micro-batch 4 (Megatron-Bridge 25.11: its recompute
  // is not in the record) are over on tensors alone; two BF16 Llama 3.1 405B rows have tensors at
  // 78.8 GiB of 79.6, with the CUDA context and NCCL buffers over it; so is GPT-3 5B on one DGX
  // A100 node without recompute (79.3 GiB). Until 2026-11-28 six more FP8 rows were over: their
  // linears' saved inputs were counted in bf16 and NeMo 2's and Megatron-Bridge's FP8 primary
  // weights were not their default.
  const std::set<std::string> known = {"nemo2407-h100-fp8-Nemotron-340B-128", "mbridge-25.11-gpt-oss-120b-bf16-64gpu",
                                       "dgxc-llama31-405b-v25.04-bf16-512gpu", "dgxc-llama31-405b-v25.05.01-bf16-512gpu",
                                       "nemo-a100-gpt3-5b-1n"};
  int64_t not_fitting = 0;
  for (const RunResult& r : result().runs) {
    if (!r.predicted || r.run->measured_oom || r.predicted_fits) continue;
    INFO(r.run->id);
    CHECK(known.count(r.run->id) == 1);
    ++not_fitting;
  }
  CHECK(not_fitting <= 5);
  CHECK(result().all.ran_not_fitting == not_fitting);  // the summary's "ran, judged OOM"
}

TEST_CASE("an interleaved run that does not say vpp takes the fewest chunks that split its layers") {
  std::map<std::string, std::string> vpp;
  for (const RunResult& r : result().runs) {
    for (const std::string& d : r.run->defaults_used) {
      if (d.rfind("plan.vpp=", 0) == 0) vpp[r.run->id] = d;
    }
  }
  CHECK(vpp["zb-t4-1.5B-1F1B-I-m24"] == "plan.vpp=3");   // 22 + 2 on 8 x 3
  CHECK(vpp["zb-t4-28.3B-1F1B-I-m96"] == "plan.vpp=2");  // 62 + 2 on 32 x 2
}

TEST_CASE("a compiled torchtitan run compiles its loss from April 2025 on (torchtitan#1033), not before") {
  std::map<std::string, LossKernel> loss;
  for (const PublishedRun& r : runs()) loss[r.id] = r.plan.cross_entropy;
  CHECK(loss["torchtitan-h200-8b-4nodes"] == LossKernel::kCompiled);          // June 2025, training.compile
  CHECK(loss["torchtitan-8b-8gpu-FSDP+compile"] == LossKernel::kPytorch);     // December 2024: loss not compiled
  CHECK(loss["torchtitan-8b-8gpu-FSDP"] == LossKernel::kPytorch);             // not compiled at all
  CHECK(loss["mbridge-26.04-llama3-70b-fp8-64gpu"] == LossKernel::kFused);    // Megatron's own
}

TEST_CASE("the archive's MoE rows, its contradictory Qwen3-30B pair named and left out: within 15% (issue 38)") {
  // The pair: the same PP2 x EP8 plan measured at 5,113 (26.02) and 9,058 (26.02.01) tokens/s/GPU a
  // release apart, and 5,275 (25.11, FP8-CS) against 10,494 (25.09, BF16) at VPP 24.
  const std::set<std::string> pair = {"mbridge-26.02-qwen3-30b-a3b-fp8-16gpu", "mbridge-25.11-qwen3-30b-a3b-fp8-cs-16gpu"};
  double sum = 0;
  int count = 0;
  for (const RunResult& r : result().runs) {
    if (r.run->group != "megatron_bridge_h100_archive" || !r.run->model.moe || pair.count(r.run->id) > 0) continue;
    REQUIRE(r.error);
    sum += std::abs(*r.error);
    ++count;
  }
  CHECK(count == 17);
  CHECK(sum / count <= 0.095);  // measured 8.3% (session 30: GPT-OSS's eager GLU clamp, its host synchronisation, YaRN's unfused RoPE, the dispatcher's and the 1F1B pipeline's synchronisations); 15.1% before
}

TEST_CASE("a run of a catalog model takes the catalog's head size and sliding window, and says so") {
  for (const PublishedRun& r : runs()) {
    if (r.id != "mbridge-26.04-gpt-oss-120b-bf16-64gpu") continue;
    CHECK(r.model.head_dim == 64);  // 64 heads of 64 on a 2880-wide residual
    CHECK(r.model.windowed_layers() == 18);
    const auto said = [&](const std::string& d) { return std::find(r.defaults_used.begin(), r.defaults_used.end(), d) != r.defaults_used.end(); };
    CHECK(said("model.head_dim=64"));
    CHECK(said("model.sliding_window=128"));
    CHECK(said("model.sliding_window_layers=18"));
    CHECK(r.model.linear_bias);  // biases on every linear, the experts' too: the format has no key for it
    CHECK(said("model.linear_bias=true"));
    CHECK(r.model.glu_clamp == 7.0);  // its GLU clamped at swiglu_limit
    CHECK(said("model.glu_clamp=7.0"));
    return;
  }
  FAIL("no GPT-OSS-120B run");
}

TEST_CASE("a Megatron-Bridge MoE run takes its recipe's dispatcher and EP overlap for the recipe's layout only, and says so") {
  std::map<std::string, const PublishedRun*> by_id;
  for (const PublishedRun& r : runs()) by_id[r.id] = &r;
  const auto said_with = [](const PublishedRun& r, const std::string& start) {
    return std::any_of(r.defaults_used.begin(), r.defaults_used.end(), [&](const std::string& d) {
      return d.rfind(start, 0) == 0 && d.find("recipe") != std::string::npos;
    });
  };
  // Qwen3-235B-A22B at TP2 PP8 VPP4 EP32: NCCL all-to-all with the EP overlap (moe_a2a_overlap=True).
  const PublishedRun& q235 = *by_id.at("mbridge-26.04-qwen3-235b-a22b-fp8-256gpu");
  CHECK(q235.plan.ep_comm_overlap);
  CHECK(q235.plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK(said_with(q235, "plan.ep_comm_overlap=true"));
  // Qwen3-30B-A3B: EP16 without a pipeline is the 26.04 HybridEP config (no overlap); PP2 VPP12 the
  // 26.02 DeepEP one with the overlap; PP2 VPP24 at micro-batch 2 is no recipe's: nothing filled.
  const PublishedRun& ep16 = *by_id.at("mbridge-26.04-qwen3-30b-a3b-fp8-16gpu");
  CHECK(ep16.plan.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK_FALSE(ep16.plan.ep_comm_overlap);
  const PublishedRun& vpp12 = *by_id.at("mbridge-26.02.01-qwen3-30b-a3b-fp8-16gpu");
  CHECK(vpp12.plan.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK(vpp12.plan.ep_comm_overlap);
  const PublishedRun& vpp24 = *by_id.at("mbridge-25.11-qwen3-30b-a3b-fp8-cs-16gpu");
  CHECK(vpp24.plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK_FALSE(vpp24.plan.ep_comm_overlap);
  CHECK_FALSE(said_with(vpp24, "plan.moe_dispatcher="));
  // GPT-OSS-120B at PP4 EP8 micro-batch 1 recomputes layernorm and moe_act; at micro-batch 4 it is
  // no recipe's layout.
  const PublishedRun& oss = *by_id.at("mbridge-26.04-gpt-oss-120b-bf16-64gpu");
  CHECK(oss.plan.recompute == Recompute::kSelective);
  CHECK(oss.plan.recompute_modules == (kRecomputeLayernorm | kRecomputeMoeAct));
  CHECK(by_id.at("mbridge-25.11-gpt-oss-120b-bf16-64gpu")->plan.recompute == Recompute::kNone);
  CHECK_FALSE(oss.plan.te_op_fuser);  // its experts' bias in Megatron-Core's per-expert loop
  // DeepSeek-V3 on H100 (25.09): DeepEP with the EP overlap beside its recomputation.
  const PublishedRun& dsv3 = *by_id.at("mbridge-25.09-deepseek-v3-dropless-fp8-1024gpu");
  CHECK(dsv3.plan.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK(dsv3.plan.ep_comm_overlap);
}

TEST_CASE("a run's CUDA graph settings state what its graphs capture") {
  const auto bw = load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/blackwell-runs.json");
  std::map<std::string, const PublishedRun*> by_id;
  for (const PublishedRun& r : bw) by_id[r.id] = &r;
  CHECK(by_id.at("mbridge-26.08-qwen3-30b-a3b-mxfp8-gb200-8gpu")->plan.cuda_graphs == kGraphFullIteration);
  CHECK(by_id.at("mbridge-26.02-qwen3-30b-a3b-mxfp8-b200-8gpu")->plan.cuda_graphs == (kGraphMoeRouter | kGraphMoePreprocess));
  CHECK(by_id.at("mbridge-26.04-qwen3-30b-a3b-mxfp8-b200-8gpu")->plan.cuda_graphs == (kGraphAttn | kGraphMoeRouter | kGraphMoePreprocess));
  CHECK(by_id.at("mbridge-25.09-qwen3-235b-a22b-fp8-gb200-64gpu-tokendrop")->plan.cuda_graphs == kGraphLayer);  // cuda_graphs:true
  CHECK(by_id.at("mbridge-25.09-qwen3-235b-a22b-fp8-b200-64gpu-tokendrop")->plan.cuda_graphs == 0);               // cuda_graphs:false
  for (const PublishedRun& r : bw) {
    CHECK(r.plan.host_stack == HostStack::kTransformerEngine);  // Megatron-Bridge
    for (const std::string& o : r.options_not_modeled) CHECK(o.rfind("cuda_graph", 0) != 0);
  }
}

TEST_CASE("a GPT-OSS run on Transformer Engine's op fuser (cutedsl_fused_grouped_mlp, or a per-rank expert capacity) adds its experts' bias without the Python loop") {
  const auto bw = load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/blackwell-runs.json");
  std::map<std::string, const PublishedRun*> by_id;
  for (const PublishedRun& r : bw) by_id[r.id] = &r;
  const PublishedRun& fused = *by_id.at("mbridge-26.06-gpt-oss-120b-mxfp8-gb200-64gpu");  // cutedsl_fused_grouped_mlp
  CHECK(fused.plan.te_op_fuser);
  CHECK(std::find(fused.options_not_modeled.begin(), fused.options_not_modeled.end(), "cutedsl_fused_grouped_mlp") == fused.options_not_modeled.end());
  CHECK(by_id.at("mbridge-26.08-gpt-oss-120b-mxfp8-gb200-64gpu")->plan.te_op_fuser);  // moe_expert_rank_capacity_factor:1.5
  CHECK_FALSE(by_id.at("mbridge-26.04-gpt-oss-120b-bf16-gb200-64gpu")->plan.te_op_fuser);
}

TEST_CASE("a LoRA run (peft:lora) takes its recipe's adapter rank, says so, and its frozen weights fit") {
  const auto bw = load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/blackwell-runs.json");
  const ValidationResult v = validate_runs(bw, CostModelChoice{});
  for (const RunResult& r : v.runs) {
    if (r.run->id != "mbridge-26.06-llama3-70b-fp8-gb200-8gpu-lora") continue;
    CHECK(r.run->plan.lora_rank == 16);  // recipes/llama/llama3.py: Llama 3 70B, dim 16
    CHECK(std::find(r.run->defaults_used.begin(), r.run->defaults_used.end(),
                    "plan.lora_rank=16 (Megatron-Bridge's LoRA dim: its Llama 3 70B / 405B recipes)") != r.run->defaults_used.end());
    CHECK(std::find(r.run->options_not_modeled.begin(), r.run->options_not_modeled.end(), "peft:lora") == r.run->options_not_modeled.end());
    CHECK(r.predicted_fits);
    CHECK(r.error > -0.15);  // -11% (-24% as full fine-tuning); packed sequences' shorter attention not modeled
    return;
  }
  FAIL("no LoRA run");
}

TEST_CASE("a run with CPU activation offloading (cpu_offloading_num_layers) holds the other layers' activations and fits") {
  const auto bw = load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/blackwell-runs.json");
  const ValidationResult v = validate_runs(bw, CostModelChoice{});
  for (const RunResult& r : v.runs) {
    if (r.run->id != "mbridge-26.04-llama3-70b-fp8-gb200-64gpu") continue;
    CHECK(r.run->plan.cpu_offload_layers == 40);
    CHECK(std::none_of(r.run->options_not_modeled.begin(), r.run->options_not_modeled.end(),
                       [](const std::string& o) { return o.rfind("cpu_offloading", 0) == 0; }));
    CHECK(r.predicted_fits);
    CHECK(r.predicted_memory_peak_gib < 185.0);
    return;
  }
  FAIL("no offloading run");
}

TEST_CASE("memory is scored where it was measured, against the figure of its kind") {
  CHECK(group("zero_bubble_pp_a100").memory_count == 48);
  CHECK(group("zero_bubble_pp_a100").memory_mean_abs_error <= 0.041);  // 3.1%: first/last stages one layer fewer, vpp 3 where it splits, ZB's k x pp pending
  CHECK(group("torchtitan").memory_count == 20);
  // 5.8% with the allocator's reserve (0.186 of the transient memory, fitted on these rows); 13.3%
  // without it (allocated against reserved: every row low by 4-25%), 20.5% before FSDP2's fp32
  // unsharded gradients, loss_parallel's temporaries and the compiled loss were modeled.
  CHECK(group("torchtitan").memory_mean_abs_error <= 0.068);
  CHECK(result().all.memory_mean_abs_error <= 0.049);  // 3.9% over the 68 runs with a figure (6.1% before the reserve)
  for (const RunResult& r : result().runs) {
    if (r.memory_error) CHECK(r.run->measured_memory_gib.has_value());
  }
}

TEST_CASE("leave-one-group-out: each group predicted with constants fitted without it (groups weighted equally)") {
  // ~110 s on two cores: one fit on every group, then one without each of the 14 groups. Freed
  // memory stays in the process, as in `validate` (page faults otherwise take a third of it).
  keep_freed_memory_in_process();
  const FitSet set = fit_set(runs(), {}, false);
  const std::vector<CrossValidatedGroup> cv = cross_validate(runs(), set, default_efficiency_constants());
  REQUIRE(cv.size() == set.groups.size());
  double in_sample = 0, left_out = 0;
  for (const CrossValidatedGroup& c : cv) {
    in_sample += c.in_sample.mean_abs_error / static_cast<double>(cv.size());
    left_out += c.held_out.mean_abs_error / static_cast<double>(cv.size());
  }
  CHECK(in_sample <= 0.103);  // measured 9.3% with attention by shape (session 9), 9.3% with torchtitan's pipeline micro-batches and row-wise Float8 (session 8); 9.8% with FP8 casts, 9.9% (2026-11-24 with TP comm overlap, 14 groups, all 337 runs; the group with the MoE rows 32.4%)
  CHECK(left_out <= 0.114);   // measured 10.7% with attention by shape (session 9; the shipped constants' held-out half improves 9.8 -> 9.3%), 10.4% (session 8); 11.0% with FP8 casts (10.7% before them) (11.0% before TP comm overlap; 8.1% / 9.2% before the MoE and FSDP + PP rows joined)
  CHECK(left_out >= in_sample - 0.005);  // leaving a group out cannot help it by more than noise
}

namespace {
const std::vector<PublishedRun>& vtrain_runs() {
  static const std::vector<PublishedRun> all =
      load_published_runs(std::string(TRAINSIM_TEST_DATA) + "/validation/vtrain-single-node.json");
  return all;
}
}  // namespace

TEST_CASE("vTrain single node: eager Megatron-DeepSpeed runs of small models, host-bound, within their bounds") {
  // 1,440 runs, 0.35-1.3B models on 2-8 A100s: the host time per op (fitted on the fit half)
  // and the framework's defaults (unfused attention, gradient all-reduce after the backward).
  const ValidationResult v = validate_runs(vtrain_runs(), CostModelChoice{});
  REQUIRE(v.all.count == 1440);
  CHECK(v.all.mean_abs_error <= 0.106);            // measured 9.6% (2026-11-23); 134.9% before
  CHECK(v.held_out_half.mean_abs_error <= 0.107);  // measured 9.7%
  CHECK(v.all.max_abs_error <= 0.41);              // measured 39.4% (TP8, micro-batch 1)
}

TEST_CASE("a fit moves only the constants named, and a constant no run depends on keeps its value") {
  EfficiencyConstants start = default_efficiency_constants();
  start.host_dispatch_s = 8.6e-6;
  // The default fit moves the compute constants, never the host time per op.
  const FitSet published = fit_set(runs(), {"bloom", "korthikanti_2022_table5"}, true);
  const EfficiencyConstants compute = fit_constants(published, start, nullptr, 1);
  CHECK(compute.host_dispatch_s == start.host_dispatch_s);
  CHECK(compute.gemm_peak_fraction != start.gemm_peak_fraction);
  // MosaicML's runs do not depend on it at all (up to 200 us per op): named, it keeps its value.
  const FitSet mosaic = fit_set(runs(), {"mosaicml_llm_foundry_benchmarks"}, true);
  const EfficiencyConstants unmoved = fit_constants(mosaic, start, nullptr, 1, {"host_dispatch_s"});
  CHECK(unmoved.host_dispatch_s == start.host_dispatch_s);
  CHECK(unmoved.gemm_peak_fraction == start.gemm_peak_fraction);  // not named
  // vTrain's runs do, and move it from the 8.6 us prior to the shipped figure.
  const FitSet vtrain = fit_set(vtrain_runs(), {}, true);
  const EfficiencyConstants fitted = fit_constants(vtrain, start, nullptr, 1, {"host_dispatch_s"});
  CHECK(fitted.host_dispatch_s == Approx(default_efficiency_constants().host_dispatch_s).epsilon(0.02));
  CHECK(fitted.gemm_peak_fraction == start.gemm_peak_fraction);
}

TEST_CASE("the allocator's reserve is fitted on memory measured with it in, and only there") {
  EfficiencyConstants start = default_efficiency_constants();
  start.allocator_reserve_fraction = 0.0;  // its prior: not modeled
  // torchtitan's reserved peaks move it from 0 to the shipped figure; nothing else moves.
  const FitSet torchtitan = fit_set(runs(), {"torchtitan"}, true);
  const EfficiencyConstants fitted = fit_constants(torchtitan, start, nullptr, 1, {"allocator_reserve_fraction"});
  CHECK(fitted.allocator_reserve_fraction == Approx(default_efficiency_constants().allocator_reserve_fraction).epsilon(0.03));
  CHECK(fitted.gemm_peak_fraction == start.gemm_peak_fraction);
  // Zero Bubble's figures are allocated peaks (reported_peak): they cannot move it.
  const FitSet zero_bubble = fit_set(runs(), {"zero_bubble_pp_a100"}, true);
  CHECK(fit_constants(zero_bubble, start, nullptr, 1, {"allocator_reserve_fraction"}).allocator_reserve_fraction == 0.0);
}

TEST_CASE("leave-one-group-out: a constant only the left-out group asks for goes back to its prior") {
  // vTrain is the only group whose runs are host-bound: without it, the host time per op is its
  // 8.6 us prior again (not the shipped value fitted on vTrain), and vTrain is predicted far off.
  std::vector<PublishedRun> both = vtrain_runs();
  for (const PublishedRun& r : runs()) {
    if (r.group == "bloom") both.push_back(r);
  }
  const FitSet set = fit_set(both, {}, false);
  const std::vector<CrossValidatedGroup> cv =
      cross_validate(both, set, default_efficiency_constants(), nullptr, {"host_dispatch_s"});
  REQUIRE(cv.size() == 2);
  REQUIRE(cv[0].in_sample.name == "vtrain_single_node");
  CHECK(cv[0].constants.host_dispatch_s == Approx(8.6e-6));
  CHECK(cv[0].in_sample.mean_abs_error <= 0.106);
  CHECK(cv[0].held_out.mean_abs_error >= 0.5);  // measured 84.4%: the miss the fit closed
}

TEST_CASE("FP8 over BF16, the same plan: the predicted speed-up against the measured one") {
  const std::vector<RunPair> pairs = same_plan_pairs(result(), PairKind::kPrecision);
  const PairSummary s = summarize_pairs(pairs);
  CHECK(s.count == 146);
  CHECK(s.within_ten_percent >= 141);  // measured 142 of 146, mean 5.3% (2026-11-29: torchao's row-wise table continued below 1024 brought the two torchtitan 8B TP8 pairs in, +11%/+14% -> within 10%); the misses are the archive's two MoE pairs across releases with an unstated precision (Qwen3-30B +103%, Qwen3-235B -21%) and two GPT-3 175B pairs across releases (+12%, +17%)
  CHECK(s.mean_abs_error <= 0.055);  // measured 5.27%
  for (const RunPair& p : pairs) {
    CHECK(p.kind == PairKind::kPrecision);
    CHECK(p.from->run->gpu == p.to->run->gpu);
    CHECK(static_cast<int>(p.from->run->plan.precision) < static_cast<int>(p.to->run->plan.precision));
  }
}
