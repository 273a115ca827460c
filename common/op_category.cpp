// Lowered op names -> op categories (common/op_category.hpp). The names are plan/lowering.cpp's.
#include "common/op_category.hpp"

#include <string>

#include "common/errors.hpp"

namespace trainsim {

OpCategory op_category_of(std::string_view name) {
  const auto starts = [&](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  const auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  // Order matters: "fc1_bias_grad" is a bias gradient, not an FC1 GEMM.
  if (ends("_bias_grad") || starts("dropout_residual") || starts("expert_bias")) return OpCategory::kResidualBias;
  if (starts("tp_") || starts("sp_") || starts("cp_") || starts("embedding_allreduce") || starts("embedding_reducescatter") ||
      starts("embedding_allgather") || starts("head_") || starts("mtp_allgather") || starts("mtp_eh_proj_gather") ||
      starts("mtp_reducescatter") || starts("mtp_allreduce")) {
    return OpCategory::kTpComm;
  }
  if (starts("fp8_")) return OpCategory::kFp8Cast;
  if (starts("moe_dispatch") || starts("moe_combine")) return OpCategory::kEpComm;
  if (starts("moe_permute") || starts("moe_unpermute")) return OpCategory::kMoePermute;
  if (starts("router")) return OpCategory::kMoeRouter;
  if (starts("lora_add")) return OpCategory::kResidualBias;
  if (starts("lora_")) return OpCategory::kGemmOther;
  // Multi-token prediction (plan/lowering.cpp add_mtp_ops): its projection, norms, lookup, concatenation.
  if (starts("mtp_eh_proj")) return OpCategory::kGemmOther;
  if (starts("mtp_norms")) return OpCategory::kNorm;
  if (starts("mtp_embedding")) return OpCategory::kEmbedding;
  if (starts("mtp_concat")) return OpCategory::kResidualBias;
  if (starts("shared_fc1")) return OpCategory::kGemmFc1;
  if (starts("shared_fc2")) return OpCategory::kGemmFc2;
  if (starts("qkv")) return OpCategory::kGemmQkv;
  if (starts("proj")) return OpCategory::kGemmProj;
  if (starts("fc1")) return OpCategory::kGemmFc1;
  if (starts("fc2")) return OpCategory::kGemmFc2;
  if (starts("lm_head")) return OpCategory::kGemmLmHead;
  if (starts("attn_")) return OpCategory::kAttentionGemm;
  if (starts("attention")) return OpCategory::kAttentionFused;
  if (starts("softmax")) return OpCategory::kSoftmax;
  if (starts("norm") || starts("final_norm")) return OpCategory::kNorm;
  if (starts("gelu") || starts("swiglu")) return OpCategory::kActivation;
  if (starts("rotary")) return OpCategory::kRotary;
  if (starts("embedding")) return OpCategory::kEmbedding;
  if (starts("cross_entropy")) return OpCategory::kCrossEntropy;
  fail_internal("known op name", __FILE__, __LINE__, "lowered op \"" + std::string(name) + "\" has no op category (common/op_category.cpp)");
}

}  // namespace trainsim
