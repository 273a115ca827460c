// NeMo and Megatron-Bridge YAML configs (--from nemo): NeMo-Megatron-Launcher's GPT-3 5B config
// as published, a Megatron-Bridge MoE config, messages in the YAML's terms, and what is listed as
// not modeled.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/errors.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"

using namespace trainsim;

namespace {

// NVIDIA/NeMo-Megatron-Launcher@3579cdb3 conf/training/gpt3/5b.yaml, the keys that matter (its
// interpolated ffn_hidden_size kept as written).
const char* const kLauncher5b = R"(
run:
  name: gpt3_5b
trainer:
  num_nodes: 16
  devices: 8
  precision: bf16
model:
  micro_batch_size: 2
  global_batch_size: 2048
  tensor_model_parallel_size: 1
  pipeline_model_parallel_size: 1
  encoder_seq_length: 2048
  num_layers: 24
  hidden_size: 4096
  ffn_hidden_size: ${multiply:4, ${.hidden_size}}
  num_attention_heads: 32
  apply_query_key_layer_scaling: True
  gradient_accumulation_fusion: True
  activations_checkpoint_granularity: full
  activations_checkpoint_method: block
  activations_checkpoint_num_layers: 0
  sequence_parallel: False
  megatron_amp_O2: True
  optim:
    name: distributed_fused_adam
    lr: 1.6e-4
)";

ModelSpec gpt3_5b() {
  ModelSpec m = resolve_model("gpt3-6.7b");
  m.name = "gpt3-5b";
  m.layers = 24;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.head_dim = 128;
  m.ffn_hidden = 16384;
  m.seq_len = 2048;
  return m;
}

bool listed(const std::vector<std::string>& list, const std::string& text) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& s) { return s.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("NeMo-Megatron-Launcher's GPT-3 5B config: 128 GPUs, ZeRO-1, and block recomputation of 0 layers") {
  const ImportedJob job = import_job(ImportFormat::kNemo, kLauncher5b, "5b.yaml", gpt3_5b(), 0);
  CHECK(job.gpus == 128);  // trainer.num_nodes x trainer.devices
  CHECK(job.plan.tp == 1);
  CHECK(job.plan.dp == 128);
  CHECK(job.plan.micro_batch == 2);
  CHECK(job.plan.global_batch == 2048);
  CHECK(job.plan.zero_stage == 1);  // distributed_fused_adam
  CHECK(job.plan.precision == Precision::kBf16);
  CHECK(job.plan.recompute == Recompute::kFull);
  CHECK(job.plan.recompute_method == RecomputeMethod::kBlock);
  CHECK(job.plan.recompute_layers == 0);  // granularity full, but no layer of a chunk recomputed
  CHECK(job.seq_len == 2048);
  CHECK(listed(job.not_modeled, "model.ffn_hidden_size: ${multiply:4, ${.hidden_size}} (an interpolation"));
  CHECK(listed(job.not_modeled, "model.apply_query_key_layer_scaling"));
  CHECK(!listed(job.not_modeled, "model.optim"));  // the optimizer's settings are not about speed
  // --gpus wins over the trainer's nodes.
  CHECK(import_job(ImportFormat::kNemo, kLauncher5b, "5b.yaml", gpt3_5b(), 64).plan.dp == 64);
}

TEST_CASE("a Megatron-Bridge config: TransformerConfig names, train batch sizes, distributed optimizer, FP8, MoE") {
  const char* const yaml = R"(
model:
  tensor_model_parallel_size: 1
  pipeline_model_parallel_size: 2
  virtual_pipeline_model_parallel_size: null
  expert_model_parallel_size: 8
  sequence_parallel: false
  num_layers: 48
  num_moe_experts: 128
  moe_router_topk: 8
  moe_token_dispatcher_type: alltoall
  recompute_granularity: selective
  recompute_modules: [moe_act, layernorm]
  fp8: hybrid
  seq_length: 4096
train:
  global_batch_size: 512
  micro_batch_size: 1
optimizer:
  use_distributed_optimizer: true
ddp:
  overlap_grad_reduce: true
  grad_reduce_in_fp32: false
comm_overlap:
  overlap_moe_expert_parallel_comm: false
mixed_precision: bf16_with_fp8_current_scaling_mixed
)";
  const ImportedJob job = import_job(ImportFormat::kNemo, yaml, "config.yaml", resolve_model("qwen3-30b-a3b"), 16);
  CHECK(job.plan.pp == 2);
  CHECK(job.plan.dp == 8);
  CHECK(job.plan.ep == 8);
  CHECK(job.plan.global_batch == 512);
  CHECK(job.plan.micro_batch == 1);
  CHECK(job.plan.zero_stage == 1);
  CHECK(job.plan.dp_overlap);
  CHECK(!job.plan.ep_comm_overlap);
  CHECK(job.plan.precision == Precision::kFp8);
  CHECK(job.plan.fp8_recipe == Fp8Recipe::kTensorwise);  // bf16_with_fp8_current_scaling_mixed
  CHECK(job.plan.fp8_params);                            // the recipe's fp8_param_gather
  CHECK_FALSE(job.plan.grad_reduce_in_fp32);             // ddp.grad_reduce_in_fp32: false
  CHECK(job.plan.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK(job.plan.recompute == Recompute::kSelective);
  CHECK(job.plan.recompute_modules == (kRecomputeMoeAct | kRecomputeLayernorm));
  CHECK(job.plan.attention == AttentionKernel::kFlash);  // Megatron-Bridge runs Transformer Engine
}

TEST_CASE("NeMo YAML: messages name the YAML keys, not YAML, no sections and wrong types are refused") {
  const ModelSpec m = gpt3_5b();
  CHECK_THROWS_WITH(import_job(ImportFormat::kNemo, "model:\n  num_layers: 32\n  micro_batch_size: 1\n", "c.yaml", m, 8),
                    Catch::Contains("c.yaml: model.num_layers 32 is not model \"gpt3-5b\"'s layers (24)"));
  CHECK_THROWS_WITH(import_job(ImportFormat::kNemo, "model: [1, 2\n", "c.yaml", m, 8), Catch::Contains("c.yaml: not YAML"));
  CHECK_THROWS_WITH(import_job(ImportFormat::kNemo, "trainer:\n  devices: 8\n", "c.yaml", m, 8), Catch::Contains("no model: or train: section"));
  CHECK_THROWS_WITH(import_job(ImportFormat::kNemo, "model:\n  sequence_parallel: maybe\n", "c.yaml", m, 8),
                    Catch::Contains("c.yaml: model.sequence_parallel: \"maybe\" is not true or false"));
  CHECK_THROWS_WITH(import_job(ImportFormat::kNemo, "model:\n  tensor_model_parallel_size: two\n", "c.yaml", m, 8),
                    Catch::Contains("model.tensor_model_parallel_size: \"two\" is not an integer"));
}

TEST_CASE("NeMo / Megatron-Bridge: TP overlap at TP 1 is switched off with a note, not refused") {
  const char* const yaml = R"(
model:
  tensor_model_parallel_size: 1
  pipeline_model_parallel_size: 1
  num_layers: 32
  seq_length: 8192
train:
  global_batch_size: 64
  micro_batch_size: 1
comm_overlap:
  tp_comm_overlap: true
mixed_precision: bf16_mixed
)";
  const ImportedJob job = import_job(ImportFormat::kNemo, yaml, "config.yaml", resolve_model("llama3-8b"), 8);
  CHECK_FALSE(job.plan.tp_comm_overlap);
  CHECK(job.plan.fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(std::any_of(job.notes.begin(), job.notes.end(), [](const std::string& n) { return n.find("switch it off") != std::string::npos; }));
}

TEST_CASE("a Megatron-Bridge DeepSeek-V3 config: its pipeline layout as a list or a string, its MTP depth checked") {
  const ModelSpec m = resolve_model("deepseek-v3");
  const std::string stages = "[[embedding, decoder, decoder, decoder, decoder], " + [] {
    std::string middle;
    for (int i = 0; i < 14; ++i) middle += "[decoder, decoder, decoder, decoder], ";
    return middle;
  }() + "[decoder, mtp, loss]]";
  const std::string yaml = "model:\n  pipeline_model_parallel_size: 16\n  expert_model_parallel_size: 8\n  num_layers: 61\n"
                           "  mtp_num_layers: 1\n  pipeline_model_parallel_layout: " + stages + "\n"
                           "train:\n  global_batch_size: 2048\n  micro_batch_size: 1\n";
  const ImportedJob job = import_job(ImportFormat::kNemo, yaml, "dsv3.yaml", m, 256);
  CHECK(job.plan.pipeline_layout == std::vector<int64_t>{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1});
  CHECK(job.not_modeled.empty());
  // The string form, and a depth the model does not have.
  const std::string as_string = "model:\n  pipeline_model_parallel_size: 16\n  expert_model_parallel_size: 8\n"
                                "  pipeline_model_parallel_layout: Et*4|(t*4|)*14tmL\ntrain:\n  global_batch_size: 2048\n";
  CHECK(import_job(ImportFormat::kNemo, as_string, "dsv3.yaml", m, 256).plan.pipeline_layout.back() == 1);
  CHECK_THROWS_WITH(import_job(ImportFormat::kNemo, yaml + "", "dsv3.yaml", [&] {
                      ModelSpec plain = m;
                      plain.mtp_layers = 0;
                      return plain;
                    }(), 256),
                    Catch::Contains("model.mtp_num_layers 1 is not model \"deepseek-v3\"'s mtp_layers"));
}
