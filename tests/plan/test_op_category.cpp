// The op-category vocabulary shared by predict and run: every lowered op has a category, names
// map as a reader of Megatron's layer would expect, and the keys are distinct.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "common/op_category.hpp"
#include "model/model_catalog.hpp"
#include "plan/lowering.hpp"

using namespace trainsim;

TEST_CASE("every op of every lowered layer and stage has an op category") {
  for (const char* name : {"gpt-tiny", "llama3-8b", "gpt2-124m"}) {
    const ModelSpec m = resolve_model(name);
    for (const bool sp : {false, true}) {
      for (const AttentionKernel attention : {AttentionKernel::kFlash, AttentionKernel::kUnfused}) {
        ParallelPlan p;
        p.tp = 2;
        p.pp = 2;
        p.global_batch = 4;
        p.sequence_parallel = sp;
        p.attention = attention;
        for (const Recompute r : {Recompute::kFull, Recompute::kSelectiveOp}) {
          p.recompute = r;
          const IterationWork w = lower_iteration(m, p);
          for (const auto* ops : {&w.layer.forward, &w.layer.backward, &w.layer.recompute, &w.stages[0].embedding_forward,
                                  &w.stages[0].embedding_backward, &w.stages[1].head_forward, &w.stages[1].head_backward}) {
            for (const Op& op : *ops) {
              const OpCategory c = op_category_of(op.name);
              CHECK((c == OpCategory::kTpComm) == (op.kind == OpKind::kCollective));
              CHECK(c != OpCategory::kOther);  // "other" is what the runtime could not attribute
            }
          }
        }
      }
    }
  }
}

TEST_CASE("lowered op names map to the categories a reader of Megatron's layer expects") {
  CHECK(op_category_of("qkv_wgrad") == OpCategory::kGemmQkv);
  CHECK(op_category_of("proj_dgrad") == OpCategory::kGemmProj);
  CHECK(op_category_of("fc1") == OpCategory::kGemmFc1);
  CHECK(op_category_of("fc1_bias_grad") == OpCategory::kResidualBias);  // a column sum, not the GEMM
  CHECK(op_category_of("fc2_wgrad") == OpCategory::kGemmFc2);
  CHECK(op_category_of("lm_head_dgrad") == OpCategory::kGemmLmHead);
  CHECK(op_category_of("attn_bmm_bwd") == OpCategory::kAttentionGemm);
  CHECK(op_category_of("attention_bwd") == OpCategory::kAttentionFused);
  CHECK(op_category_of("softmax_bwd") == OpCategory::kSoftmax);
  CHECK(op_category_of("final_norm_bwd") == OpCategory::kNorm);
  CHECK(op_category_of("swiglu_bwd") == OpCategory::kActivation);
  CHECK(op_category_of("dropout_residual_bwd") == OpCategory::kResidualBias);
  CHECK(op_category_of("embedding_bwd") == OpCategory::kEmbedding);
  CHECK(op_category_of("embedding_reducescatter") == OpCategory::kTpComm);
  CHECK(op_category_of("head_allgather") == OpCategory::kTpComm);
  CHECK(op_category_of("sp_allgather_wgrad") == OpCategory::kTpComm);
  CHECK(op_category_of("cross_entropy_bwd") == OpCategory::kCrossEntropy);
}

TEST_CASE("op category keys are distinct snake_case names") {
  std::set<std::string> seen;
  for (const std::string_view key : kOpCategoryKeys) {
    CHECK(seen.insert(std::string(key)).second);
    for (const char ch : key) CHECK(((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'));
  }
  CHECK(op_category_key(OpCategory::kOther) == "other");
}

TEST_CASE("a RoPE model's layer rotates Q and K in both passes, a learned-position model's does not") {
  const auto count_rotary = [](const std::vector<Op>& ops) {
    int n = 0;
    for (const Op& op : ops) n += op_category_of(op.name) == OpCategory::kRotary ? 1 : 0;
    return n;
  };
  ParallelPlan p;
  p.tp = 2;
  p.global_batch = 2;
  const IterationWork llama = lower_iteration(resolve_model("llama3-8b"), p);
  CHECK(count_rotary(llama.layer.forward) == 1);
  CHECK(count_rotary(llama.layer.backward) == 1);
  const IterationWork gpt = lower_iteration(resolve_model("gpt2-124m"), p);
  CHECK(count_rotary(gpt.layer.forward) == 0);
}

namespace {
double bytes_of(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op.bytes;
  }
  return 0.0;
}
}  // namespace

TEST_CASE("an eager RMSNorm moves 9x (forward) and 7.5x (backward) the bytes of a fused one, LayerNorm is fused anyway") {
  ParallelPlan fused, eager;
  eager.norm = NormKernel::kEager;
  const ModelSpec llama = resolve_model("llama3-8b");  // RMSNorm
  const IterationWork f = lower_iteration(llama, fused), e = lower_iteration(llama, eager);
  CHECK(bytes_of(e.layer.forward, "norm1") == Approx(9.0 * bytes_of(f.layer.forward, "norm1")));
  CHECK(bytes_of(e.layer.backward, "norm2_bwd") == Approx(508.0 / 68.0 * bytes_of(f.layer.backward, "norm2_bwd")));
  CHECK(bytes_of(e.stages[0].head_forward, "final_norm") == Approx(9.0 * bytes_of(f.stages[0].head_forward, "final_norm")));
  const ModelSpec gpt = resolve_model("gpt2-124m");  // LayerNorm
  CHECK(bytes_of(lower_iteration(gpt, eager).layer.forward, "norm1") == bytes_of(lower_iteration(gpt, fused).layer.forward, "norm1"));
}

TEST_CASE("GPT-NeoX's unfused softmax masks the scores in place both ways, its unfused bias-GELU adds the bias apart") {
  const ModelSpec gpt = resolve_model("gpt2-355m");  // biased GELU FFN
  ParallelPlan fused;
  fused.attention = AttentionKernel::kUnfused;
  ParallelPlan neox = fused;
  neox.softmax_fusion = false;
  neox.bias_gelu_fusion = false;
  const IterationWork f = lower_iteration(gpt, fused), n = lower_iteration(gpt, neox);
  // masked_fill_ reads and writes the scores: two passes, half the softmax's four with its dropout.
  REQUIRE(gpt.dropout);
  CHECK(bytes_of(n.layer.forward, "softmax_mask_fill") == Approx(0.5 * bytes_of(f.layer.forward, "softmax")));
  CHECK(bytes_of(n.layer.backward, "softmax_mask_fill_bwd") == Approx(0.5 * bytes_of(f.layer.forward, "softmax")));
  CHECK(bytes_of(f.layer.forward, "softmax_mask_fill") == 0);
  // The bias add reads and writes the FFN's inner tensor, as the GELU does.
  CHECK(bytes_of(n.layer.forward, "gelu_bias_add") == Approx(bytes_of(f.layer.forward, "gelu")));
  CHECK(bytes_of(f.layer.forward, "gelu_bias_add") == 0);
  CHECK(op_category_of("softmax_mask_fill") == OpCategory::kSoftmax);
  CHECK(op_category_of("gelu_bias_add") == OpCategory::kActivation);
  // Flash attention has no separate softmax; a SwiGLU FFN no GELU bias.
  ParallelPlan flash = neox;
  flash.attention = AttentionKernel::kFlash;
  CHECK(bytes_of(lower_iteration(gpt, flash).layer.forward, "softmax_mask_fill") == 0);
  CHECK(bytes_of(lower_iteration(resolve_model("llama3-8b"), neox).layer.forward, "gelu_bias_add") == 0);
}
