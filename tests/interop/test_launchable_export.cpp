// Megatron-LM exports are launchable jobs: the model's architecture flags (RoPE base included), the
// attention backend that was priced, a vocabulary Megatron does not pad, a comment listing what the
// user must add; checked by importing the export back.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/plan_json.hpp"

using namespace trainsim;

namespace {
ParallelPlan plan_for(int64_t dp, int64_t tp, AttentionKernel attention) {
  ParallelPlan p;
  p.dp = dp;
  p.tp = tp;
  p.sequence_parallel = tp > 1;
  p.micro_batch = 1;
  p.global_batch = dp * 4;
  p.zero_stage = 1;
  p.recompute = Recompute::kSelective;
  p.precision = Precision::kBf16;
  p.attention = attention;
  return p;
}
}  // namespace

TEST_CASE("Llama 3 exports its RoPE base and the fused attention priced, and says what the user must add") {
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK(m.rope_theta == 500000.0);  // Meta-Llama-3-8B config.json rope_theta
  const std::string args = export_plan(&m, plan_for(4, 2, AttentionKernel::kFlash), 8, ExportTarget::kMegatron);
  for (const char* expected : {"--position-embedding-type rope --rotary-base 500000", "--normalization RMSNorm", "--swiglu",
                               "--untie-embeddings-and-output-weights", "--disable-bias-linear",
                               "--group-query-attention --num-query-groups 8", "--make-vocab-size-divisible-by 128",
                               "--transformer-impl transformer_engine --attention-backend fused", "# trainsim: add what",
                               "--data-path", "--tokenizer-type", "--train-iters", "--attention-backend fused)"}) {
    CHECK_THAT(args, Catch::Contains(expected));
  }
  CHECK_THAT(args, !Catch::Contains("--use-flash-attn"));
}

TEST_CASE("every built-in model's Megatron export imports back to the same plan, model and RoPE base, with nothing left unread") {
  for (const ModelSpec& m : builtin_models()) {
    if (m.sliding_window > 0 || m.heads % 2 != 0) continue;  // Megatron arguments do not carry a window; tp 2 needs even heads
    for (const AttentionKernel attention : {AttentionKernel::kFlash, AttentionKernel::kUnfused}) {
      const ParallelPlan p = plan_for(4, 2, attention);
      INFO(m.name << " attention " << to_string(attention));
      const std::string args = export_plan(&m, p, 8, ExportTarget::kMegatron);
      const ImportedJob back = import_megatron(args, "export", m, p.gpus());
      CHECK(plan_to_json(back.plan).dump() == plan_to_json(p).dump());
      CHECK(back.unknown.empty());
      CHECK(back.not_modeled.empty());
      CHECK(back.notes.empty());  // no RoPE base, attention or padding disagreement
      CHECK(back.seq_len == m.seq_len);
    }
  }
}

TEST_CASE("an export read back against a model of another RoPE base says so") {
  const ModelSpec llama3 = resolve_model("llama3-8b");
  ModelSpec other = llama3;
  other.rope_theta = 10000.0;
  const std::string args = export_plan(&llama3, plan_for(4, 2, AttentionKernel::kFlash), 8, ExportTarget::kMegatron);
  const ImportedJob back = import_megatron(args, "export", other, 8);
  REQUIRE(back.notes.size() == 1);
  CHECK_THAT(back.notes[0], Catch::Contains("--rotary-base 500000 is not model \"llama3-8b\"'s rope_theta (10000)"));
}

TEST_CASE("a vocabulary tp does not divide is exported with a comment: Megatron pads it") {
  ModelSpec m = resolve_model("gpt3-1.3b");  // vocab 50257: odd
  const std::string args = export_plan(&m, plan_for(4, 2, AttentionKernel::kFlash), 8, ExportTarget::kMegatron);
  const std::string arguments = args.substr(args.find("\n--num-layers"));  // below the comments
  CHECK_THAT(arguments, !Catch::Contains("--make-vocab-size-divisible-by"));
  CHECK_THAT(args, Catch::Contains("# Megatron pads the vocabulary (50257)"));
}

TEST_CASE("the built-in models' RoPE base is their Hugging Face config.json's rope_theta (what export writes)") {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b"}) {
    INFO(name);
    const ModelSpec hf = resolve_model(std::string(TRAINSIM_TEST_DATA) + "/hf/" + name + "/config.json");
    CHECK(resolve_model(name).rope_theta == hf.rope_theta);
  }
  CHECK(resolve_model("llama2-7b").rope_theta == 10000.0);  // meta-llama/Llama-2-7b-hf config.json
}
