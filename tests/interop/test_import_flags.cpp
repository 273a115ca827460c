// What an import reads a flag or key to mean: Megatron-LM's recomputation flags, unknown flags with
// the nearest known one, flags known but not modeled, flags without effect; DeepSpeed's activation
// checkpointing keys and its offload (refused until modeled).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "common/nearest_name.hpp"
#include "interop/flag_suggestion.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"

using namespace trainsim;

namespace {
std::string read_data(const std::string& name) {
  std::ifstream in(std::string(TRAINSIM_TEST_DATA) + "/import/" + name);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
std::string join(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  return all;
}
}  // namespace

TEST_CASE("edit distance counts insertions, deletions and substitutions") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("--sequence-paralel", "--sequence-parallel") == 1);
  CHECK(edit_distance("--bf16", "--fp16") == 2);
  CHECK(edit_distance("--bf61", "--bf16") == 2);  // a swap is two edits
}

TEST_CASE("the nearest known name is suggested only when it is close enough to be a misspelling") {
  const std::vector<std::string> known = {"--sequence-parallel", "--tensor-model-parallel-size", "--bf16", "--pp"};
  CHECK(nearest_flag("--sequence-paralel", known) == std::optional<std::string>("--sequence-parallel"));
  CHECK(nearest_flag("--tensor-model-paralel-sise", known) == std::optional<std::string>("--tensor-model-parallel-size"));
  CHECK_FALSE(nearest_flag("--tp", known));                  // 4 characters: no edit allowed
  CHECK_FALSE(nearest_flag("--foo-bar-baz", known));         // nothing near
  CHECK_FALSE(nearest_flag("--sequence-parallel", known));   // known itself
  CHECK(with_suggestion("--bf17", known) == "--bf17 (did you mean --bf16?)");
  CHECK(with_suggestion("--bf61", known) == "--bf61");  // 6 characters: one edit allowed
  CHECK(with_suggestion("--foo", known) == "--foo");
}

TEST_CASE("Megatron-LM: --recompute-activations is selective recomputation, as Megatron-LM turns it") {
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK(import_megatron("--recompute-activations", "args", m, 8).plan.recompute == Recompute::kSelective);
  const ImportedJob both = import_megatron("--recompute-granularity full --recompute-activations", "args", m, 8);
  CHECK(both.plan.recompute == Recompute::kSelective);  // arguments.py: it overrides the granularity
  CHECK_THAT(join(both.notes), Catch::Contains("--recompute-activations overrides --recompute-granularity full"));
  // Megatron-DeepSpeed's --checkpoint-activations: full, every --checkpoint-num-layers layers together.
  const ImportedJob ds = import_megatron("--checkpoint-activations --checkpoint-num-layers 2", "args", m, 8);
  CHECK((ds.plan.recompute == Recompute::kFull && ds.plan.recompute_method == RecomputeMethod::kUniform && ds.plan.recompute_layers == 2));
  CHECK(ds.unknown.empty());
}

TEST_CASE("Megatron-LM: unknown, not modeled and no-effect flags are told apart, a misspelling gets its nearest flag") {
  const ModelSpec m = resolve_model("llama3-8b");
  const ImportedJob job = import_megatron(read_data("megatron_flag_kinds.sh"), "kinds.sh", m, 0);
  CHECK(job.unknown == std::vector<std::string>{"--sequence-paralel (did you mean --sequence-parallel?)"});
  CHECK(job.not_modeled == std::vector<std::string>{"--manual-gc (Python garbage collection at fixed steps)"});
  CHECK(job.no_effect == std::vector<std::string>{"--lr"});
  CHECK_FALSE(job.plan.sequence_parallel);  // the misspelt flag is not read
  CHECK(job.plan.recompute == Recompute::kSelective);
  CHECK(job.notes.empty());  // --rotary-base 500000 is llama3-8b's
  CHECK(import_report(job) == std::vector<std::string>{
                                  "unknown, not read: --sequence-paralel (did you mean --sequence-parallel?)",
                                  "known, not modeled (the prediction may be off): --manual-gc (Python garbage collection at fixed steps)",
                                  "known, no effect on speed or memory: --lr"});
}

TEST_CASE("Megatron-LM: --attention-backend is the kernel, flash is listed as priced like cuDNN's") {
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK(import_megatron("--attention-backend fused", "args", m, 8).plan.attention == AttentionKernel::kFlash);
  CHECK(import_megatron("--attention-backend auto", "args", m, 8).plan.attention == AttentionKernel::kFlash);
  CHECK(import_megatron("--attention-backend unfused --use-flash-attn", "args", m, 8).plan.attention == AttentionKernel::kUnfused);
  CHECK(import_megatron("--attention-backend local", "args", m, 8).plan.attention == AttentionKernel::kUnfused);
  const ImportedJob flash = import_megatron("--attention-backend flash", "args", m, 8);
  CHECK(flash.plan.attention == AttentionKernel::kFlash);
  REQUIRE(flash.not_modeled.size() == 1);
  CHECK_THAT(flash.not_modeled[0], Catch::StartsWith("--attention-backend flash (FlashAttention-2"));
  CHECK_THROWS_WITH(import_megatron("--attention-backend cudnn", "run.sh", m, 8),
                    Catch::Contains("run.sh: --attention-backend: \"cudnn\" is not one of: flash, fused, unfused, local, auto"));
}

TEST_CASE("Megatron-LM: optimizer offload to the host is refused with the reason") {
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK_THROWS_WITH(import_megatron("--use-distributed-optimizer --optimizer-cpu-offload", "run.sh", m, 8),
                    Catch::Contains("run.sh: --optimizer-cpu-offload: moves the optimizer states and their step to the host"));
}

TEST_CASE("Megatron-LM: the script's architecture flags and RoPE base are checked against the model") {
  const ModelSpec m = resolve_model("llama3-8b");
  const std::string shape = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention --num-query-groups 8 "
                            "--ffn-hidden-size 14336 --swiglu ";
  CHECK_THROWS_WITH(import_megatron(shape, "run.sh", m, 8),
                    Catch::Contains("--normalization LayerNorm (Megatron's default), but model \"llama3-8b\"'s norm is rmsnorm") &&
                        Catch::Contains("--untie-embeddings-and-output-weights is not given") && Catch::Contains("--disable-bias-linear is not given"));
  const std::string llama = shape + "--normalization RMSNorm --position-embedding-type rope --untie-embeddings-and-output-weights --disable-bias-linear";
  const ImportedJob no_base = import_megatron(llama, "run.sh", m, 8);
  CHECK_THAT(join(no_base.notes), Catch::Contains("no --rotary-base: Megatron-LM's default 10000 is not model \"llama3-8b\"'s rope_theta (500000)"));
  CHECK_THAT(join(import_megatron(llama + " --rotary-base 500000", "run.sh", m, 8).notes), !Catch::Contains("rotary"));
  const ImportedJob padded = import_megatron(llama + " --rotary-base 500000 --tensor-model-parallel-size 8", "run.sh", m, 8);
  CHECK(padded.not_modeled.empty());  // no --make-vocab-size-divisible-by: not stated, not reported
  const ImportedJob stated = import_megatron(llama + " --make-vocab-size-divisible-by 128 --tensor-model-parallel-size 8", "run.sh", m, 8);
  REQUIRE(stated.not_modeled.size() == 1);
  CHECK(stated.not_modeled[0] == "--make-vocab-size-divisible-by 128 (the vocabulary 128256 padded to 129024; priced unpadded)");
}

TEST_CASE("DeepSpeed: activation_checkpointing configures checkpointing without turning it on, its keys are sorted") {
  const ImportedJob job = import_deepspeed(read_data("ds_activation_checkpointing.json"), "ds.json", 0);
  CHECK(job.plan.recompute == Recompute::kNone);
  REQUIRE(job.notes.size() == 1);
  CHECK_THAT(job.notes[0], Catch::Contains("does not turn it on") && Catch::Contains("add --recompute full"));
  CHECK(job.not_modeled == std::vector<std::string>{"activation_checkpointing.synchronize_checkpoint_boundary"});
  CHECK(job.no_effect == std::vector<std::string>{"activation_checkpointing.contiguous_memory_optimization",
                                                  "activation_checkpointing.number_checkpoints", "activation_checkpointing.profile"});
  CHECK_THROWS_WITH(import_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "activation_checkpointing": {"cpu_checkpointing": true}})", "ds.json", 8),
                    Catch::Contains("ds.json: /activation_checkpointing/cpu_checkpointing: true"));
}

TEST_CASE("DeepSpeed: CPU and NVMe offload are refused, each with the key, the device and why") {
  CHECK_THROWS_WITH(import_deepspeed(read_data("ds_cpu_offload.json"), "ds.json", 0),
                    Catch::Contains("ds.json: /zero_optimization/offload_optimizer/device: \"cpu\": the optimizer states and their step "
                                    "offloaded to host memory (ZeRO-Offload)") &&
                        Catch::Contains("ds.json: /zero_optimization/offload_param/device: \"nvme\": the parameters offloaded to NVMe"));
  CHECK_THROWS_WITH(import_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "cpu_offload": true}})", "ds.json", 8),
                    Catch::Contains("/zero_optimization/cpu_offload: true"));
}
