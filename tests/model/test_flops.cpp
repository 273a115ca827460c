// FLOP formulas against the papers that define them (docs/model-math.md §2).
#include <catch2/catch.hpp>

#include "model/flops.hpp"
#include "model/model_catalog.hpp"
#include "model/param_count.hpp"

using namespace trainsim;

namespace {
// Narayanan et al. 2021, eq. 3: FLOPs per iteration with full recomputation.
double narayanan_eq3(const ModelSpec& m, double batch) {
  const double s = static_cast<double>(m.seq_len), l = static_cast<double>(m.layers);
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  return 96.0 * batch * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}
}  // namespace

TEST_CASE("hardware FLOPs with full recompute equal Narayanan et al. 2021 eq. 3 for GPT shapes") {
  for (const char* name : {"megatron-1.7b", "megatron-39.1b", "megatron-1t", "gpt3-175b", "megatron-22b"}) {
    INFO(name);
    const ModelSpec m = resolve_model(name);
    CHECK(hardware_flops_per_iteration(m, 512, Recompute::kFull) == Approx(narayanan_eq3(m, 512)).epsilon(1e-12));
  }
}

TEST_CASE("Megatron Table 1 throughput: our FLOPs reproduce the published TFLOP/s per GPU") {
  // Narayanan et al. 2021 Table 1 (= Megatron-LM README, April 2021): model, GPUs, batch,
  // iteration time (shared/validation/published-runs.json) and achieved TFLOP/s per GPU.
  struct Row {
    const char* model;
    double gpus, batch, iteration_s, tflops_per_gpu;
  };
  const Row rows[] = {
      {"megatron-1.7b", 32, 512, 3.53, 137},      {"megatron-3.6b", 64, 512, 3.70, 138},
      {"megatron-7.5b", 128, 512, 3.70, 142},     {"megatron-18.4b", 256, 1024, 9.40, 135},
      {"megatron-39.1b", 512, 1536, 14.45, 138},  {"megatron-76.1b", 1024, 1792, 16.06, 140},
      {"megatron-145.6b", 1536, 2304, 24.82, 148}, {"megatron-310.1b", 1920, 2160, 37.61, 155},
      {"megatron-529.6b", 2520, 2520, 54.08, 163}, {"megatron-1t", 3072, 3072, 102.63, 163},
  };
  for (const auto& row : rows) {
    INFO(row.model);
    const ModelSpec m = resolve_model(row.model);
    const double flops = hardware_flops_per_iteration(m, static_cast<int64_t>(row.batch), Recompute::kFull);
    CHECK(flops / (row.iteration_s * row.gpus) / 1e12 == Approx(row.tflops_per_gpu).epsilon(0.01));
  }
}

TEST_CASE("model FLOPs per token follow the PaLM convention 6N + 12 l s (heads x head_dim)") {
  // Chowdhery et al. 2022, Appendix B; N = matmul parameters (LM head included, embeddings not).
  const ModelSpec m = resolve_model("llama3-8b");
  const double n = static_cast<double>(count_params(m).matmul_active);
  const double expected = 6.0 * n + 12.0 * m.layers * static_cast<double>(m.seq_len) * m.attention_width();
  CHECK(flops_per_token(m, Recompute::kNone).model == Approx(expected).epsilon(1e-12));
}

TEST_CASE("recomputation adds exactly the forward work it repeats") {
  const ModelSpec m = resolve_model("gpt3-175b");
  const FlopsPerToken none = flops_per_token(m, Recompute::kNone);
  const FlopsPerToken sel = flops_per_token(m, Recompute::kSelective);
  const FlopsPerToken full = flops_per_token(m, Recompute::kFull);
  CHECK(none.hardware == none.model);
  CHECK(sel.model == none.model);
  // Korthikanti et al. 2022 §5: selective recompute repeats only QK^T, softmax and AV.
  CHECK(sel.hardware - sel.model == Approx(4.0 * m.layers * m.seq_len * m.attention_width()));
  CHECK(full.hardware - full.model == Approx(none.forward() - none.forward_lm_head));
  CHECK(full.hardware / full.model == Approx(4.0 / 3.0).epsilon(0.01));
}

TEST_CASE("an MoE model's FLOPs count only the routed experts") {
  const ModelSpec m = resolve_model("mixtral-8x7b");
  const ParamCounts c = count_params(m);
  // matmul parameters: every active linear layer (top-2 experts, router) plus the LM head.
  CHECK(static_cast<double>(c.matmul_active) < 0.3 * static_cast<double>(c.total));
  CHECK(flops_per_token(m, Recompute::kNone).forward_matmul == 2.0 * static_cast<double>(c.matmul_active));
}

TEST_CASE("per-op checkpointing runs wk, wo and the FFN's third matmul again, and no attention") {
  const ModelSpec m = resolve_model("llama3-8b");
  const FlopsPerToken f = flops_per_token(m, Recompute::kSelectiveOp);
  const double h = m.hidden, rerun = h * m.kv_width() + m.attention_width() * h + h * m.ffn_hidden;
  CHECK(f.hardware - f.model == Approx(2.0 * m.layers * rerun));
  CHECK(f.hardware < flops_per_token(m, Recompute::kFull).hardware);
}

TEST_CASE("full recompute of R of the l layers (block method) adds R layers' forward: Narayanan eq. 3 generalised") {
  // Narayanan et al. 2021 eq. 3 counts 96 B s l h^2 (1 + s / 6h) + 6 B s h V: the layers four
  // times (forward, backward, recomputed forward), the LM head three. With R layers recomputed
  // the layers count 72 + 24 R / l.
  for (const char* name : {"megatron-1.7b", "gpt3-175b"}) {
    INFO(name);
    const ModelSpec m = resolve_model(name);
    const double b = 512, s = m.seq_len, l = m.layers, h = m.hidden, v = m.vocab;
    for (const int64_t r : {int64_t{0}, int64_t{1}, m.layers / 3, m.layers - 1, m.layers}) {
      INFO(r << " layers recomputed");
      const double expected = (72.0 * l + 24.0 * static_cast<double>(r)) * b * s * h * h * (1.0 + s / (6.0 * h)) + 6.0 * b * s * h * v;
      CHECK(hardware_flops_per_iteration(m, 512, Recompute::kFull, r) == Approx(expected).epsilon(1e-12));
    }
    CHECK(hardware_flops_per_iteration(m, 512, Recompute::kFull, 0) == Approx(hardware_flops_per_iteration(m, 512, Recompute::kNone)).epsilon(1e-12));
    CHECK(hardware_flops_per_iteration(m, 512, Recompute::kFull, m.layers) == hardware_flops_per_iteration(m, 512, Recompute::kFull));
  }
}
