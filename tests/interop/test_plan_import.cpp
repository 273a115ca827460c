// Importers of launch files: what they read, what they list as not modeled, and bad values.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "interop/launch_args.hpp"
#include "interop/plan_export.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"
#include "plan/rank_memory.hpp"
#include "plan/zero3_collectives.hpp"

using namespace trainsim;

namespace {
std::string read_data(const std::string& name) {
  std::ifstream in(std::string(TRAINSIM_TEST_DATA) + "/import/" + name);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("a launch script's words: comments, continuations, quotes and its own variables") {
  const std::vector<std::string> words = launch_words(
      "# a comment --tensor-model-parallel-size 9\nTP=4\nexport NODES=${NNODES:-2}\nARGS=\"--pp $TP\"\n"
      "torchrun --nnodes $NODES \\\n  train.py --tp ${TP} $ARGS --name 'a b' --dp=$UNSET\n");
  CHECK(words == std::vector<std::string>{"export", "torchrun", "--nnodes", "2", "train.py", "--tp", "4", "--pp", "4",
                                          "--name", "a b", "--dp=$UNSET"});
  const std::vector<LaunchFlag> flags = launch_flags({"--bf16", "x.py", "--tp", "4", "--swiglu", "--dp=2"}, {"--bf16", "--swiglu"});
  REQUIRE(flags.size() == 4);
  CHECK((flags[0].name == "--bf16" && !flags[0].value));
  CHECK((flags[1].name == "--tp" && *flags[1].value == "4"));
  CHECK((flags[3].name == "--dp" && *flags[3].value == "2"));
}

TEST_CASE("a Megatron-LM launch script imports with its world size, and lists the flags not modeled") {
  const ModelSpec m = resolve_model("llama3-8b");
  const ImportedJob job = import_megatron(read_data("megatron_llama3_8b.sh"), "train.sh", m, 0);
  CHECK(job.gpus == 16);  // torchrun --nnodes ${NNODES:-2} --nproc-per-node 8
  CHECK(job.seq_len == 8192);
  const ParallelPlan& p = job.plan;
  CHECK((p.dp == 4 && p.tp == 2 && p.pp == 2 && p.cp == 1));
  CHECK((p.micro_batch == 1 && p.global_batch == 128 && p.zero_stage == 1));
  CHECK((p.sequence_parallel && p.dp_overlap && p.recompute == Recompute::kSelective));
  CHECK((p.attention == AttentionKernel::kFlash && p.precision == Precision::kBf16));
  // --lr, --seed, --data-path, --save ...: known, no effect on speed or memory.
  CHECK(p.tp_comm_overlap);  // --tp-comm-overlap
  CHECK(job.not_modeled == std::vector<std::string>{"--overlap-param-gather (the ZeRO-1 parameter all-gather overlapped with the forward)"});
  CHECK(job.unknown.empty());
  CHECK(job.no_effect == std::vector<std::string>{"--lr", "--min-lr", "--train-iters", "--seed", "--data-path", "--tokenizer-type",
                                                  "--save", "--load", "--log-interval"});
  CHECK(import_megatron(read_data("megatron_llama3_8b.sh"), "train.sh", m, 32).plan.dp == 8);  // --gpus wins
}

TEST_CASE("Megatron-LM flags trainsim does not know are listed as unknown, never dropped") {
  const ModelSpec m = resolve_model("llama3-8b");
  const ImportedJob job = import_megatron("--tensor-model-parallel-size 2 --foo 3 --bar --lr 1e-4 --bar", "args", m, 8);
  CHECK(job.unknown == std::vector<std::string>{"--foo", "--bar"});
  CHECK(job.not_modeled.empty());
  CHECK(job.no_effect == std::vector<std::string>{"--lr"});
  CHECK(job.plan.dp == 4);
}

TEST_CASE("Megatron-LM's --recompute-method and --recompute-num-layers are read into the plan") {
  const ModelSpec m = resolve_model("llama3-8b");
  const ImportedJob block = import_megatron("--recompute-granularity full --recompute-method block --recompute-num-layers 4",
                                            "args", m, 8);
  CHECK(block.not_modeled.empty());
  CHECK((block.plan.recompute == Recompute::kFull && block.plan.recompute_method == RecomputeMethod::kBlock &&
         block.plan.recompute_layers == 4));
  // NeMo launcher's GPT-3 5B (conf/training/gpt3/5b.yaml): full, block, 0 layers.
  const ImportedJob none = import_megatron("--recompute-granularity full --recompute-method block --recompute-num-layers 0", "args", m, 8);
  CHECK((none.plan.recompute_method == RecomputeMethod::kBlock && none.plan.recompute_layers == 0));
  const ImportedJob uniform = import_megatron("--recompute-granularity full --recompute-method uniform --recompute-num-layers 2", "args", m, 8);
  CHECK((uniform.plan.recompute_method == RecomputeMethod::kUniform && uniform.plan.recompute_layers == 2));
  const ImportedJob plain = import_megatron("--recompute-granularity full", "args", m, 8);
  CHECK((plain.plan.recompute_method == RecomputeMethod::kUniform && plain.plan.recompute_layers == 1));
  CHECK_THROWS_WITH(import_megatron("--recompute-granularity full --recompute-method uniform --recompute-num-layers 0", "run.sh", m, 8),
                    Catch::Contains("run.sh: --recompute-num-layers: 0 must be from 1 to"));
  CHECK_THROWS_WITH(import_megatron("--recompute-granularity full --recompute-method block --recompute-num-layers -1", "run.sh", m, 8),
                    Catch::Contains("run.sh: --recompute-num-layers: -1 must be from 0 to"));
  CHECK_THROWS_WITH(import_megatron("--recompute-granularity full --recompute-method blocks", "run.sh", m, 8),
                    Catch::Contains("run.sh: --recompute-method: \"blocks\" is not one of: uniform, block"));
}

TEST_CASE("malformed Megatron-LM values are InputErrors naming the file, the flag and the value") {
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK_THROWS_AS(import_megatron(read_data("megatron_bad_value.sh"), "bad.sh", m, 0), InputError);
  CHECK_THROWS_WITH(import_megatron(read_data("megatron_bad_value.sh"), "bad.sh", m, 0),
                    "bad.sh: --tensor-model-parallel-size: \"x\" is not an integer");
  CHECK_THROWS_WITH(import_megatron("--pipeline-model-parallel-size $PP", "run.sh", m, 8),
                    "run.sh: --pipeline-model-parallel-size: \"$PP\" is not an integer");
  CHECK_THROWS_WITH(import_megatron("--micro-batch-size 99999999999999999999", "run.sh", m, 8), Catch::Contains("is not an integer"));
  CHECK_THROWS_WITH(import_megatron("--micro-batch-size 0", "run.sh", m, 8), "run.sh: --micro-batch-size: 0 must be from 1 to 67108864");
  CHECK_THROWS_WITH(import_megatron("--recompute-granularity partial", "run.sh", m, 8), Catch::Contains("\"partial\" is not one of"));
  CHECK_THROWS_WITH(import_megatron("--tensor-model-parallel-size 2", "run.sh", m, 0), Catch::Contains("the GPU count is not in the file"));
  CHECK_THROWS_WITH(import_megatron("--num-layers 80 --hidden-size 4096", "run.sh", m, 8),
                    Catch::Contains("--num-layers 80 is not model \"llama3-8b\"'s layers (32)"));
  CHECK_THROWS_WITH(import_megatron("--account-for-embedding-in-pipeline-split", "run.sh", m, 8), Catch::Contains("without the other"));
}

TEST_CASE("a DeepSpeed config imports its batch arithmetic, ZeRO stage and buckets, and lists the keys not modeled") {
  const ImportedJob job = import_deepspeed(read_data("ds_config.json"), "ds.json", 0);
  CHECK(job.gpus == 16);  // 256 / (4 x 4)
  CHECK((job.plan.dp == 16 && job.plan.micro_batch == 4 && job.plan.global_batch == 256));
  CHECK((job.plan.zero_stage == 2 && job.plan.dp_overlap && job.plan.precision == Precision::kBf16));
  CHECK((job.plan.deepspeed_reduce_bucket == 5e8 && job.plan.deepspeed_contiguous_gradients));
  CHECK(job.not_modeled.empty());
  // A config's own buckets: the gradient buckets' memory and ZeRO-3's call counts follow them.
  const ImportedJob small = import_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "train_batch_size": 8,
      "zero_optimization": {"stage": 3, "reduce_bucket_size": 2e8, "stage3_prefetch_bucket_size": 1e7}})", "ds.json", 8);
  CHECK((small.plan.deepspeed_reduce_bucket == 2e8 && small.plan.deepspeed_prefetch_bucket == 1e7));
  ParallelPlan zero3 = small.plan;
  zero3.zero_engine = ZeroEngine::kDeepSpeed;
  zero3.precision = Precision::kBf16;
  CHECK(deepspeed_bucket_bytes(zero3) == 2e8 * 2);  // one bucket at stage 3, bf16
  zero3.zero3_collectives = Zero3Collectives::kDeepSpeed;
  ParallelPlan defaults = zero3;
  defaults.deepspeed_reduce_bucket = 5e8;
  defaults.deepspeed_prefetch_bucket = 5e7;
  const ModelSpec m = resolve_model("llama3-8b");
  CHECK(zero3_calls(m, zero3).gathers_per_layer > zero3_calls(m, defaults).gathers_per_layer);
  CHECK(zero3_calls(m, zero3).reduces_per_layer == Approx(zero3_calls(m, defaults).reduces_per_layer * 2.5));
  zero3.deepspeed_contiguous_gradients = false;
  CHECK(deepspeed_bucket_bytes(zero3) == 0);
  const ImportedJob auto_bucket = import_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "train_batch_size": 8,
      "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})", "ds.json", 8);
  CHECK(auto_bucket.plan.deepspeed_reduce_bucket == 5e8);
  CHECK_THROWS_WITH(import_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"reduce_bucket_size": -3}})", "ds.json", 8),
                    Catch::Contains("/zero_optimization/reduce_bucket_size: expected a number of elements"));

  const ImportedJob stage3 = import_deepspeed(R"({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "none"}}, "train_batch_size": "auto", "bf16": {"enabled": "auto"}})", "ds.json", 8);
  CHECK((stage3.plan.global_batch == 16 && stage3.plan.dp_overlap && stage3.plan.precision == Precision::kFp32));
  CHECK(stage3.not_modeled.empty());  // offload to device "none": no offload
  CHECK(stage3.notes.size() == 2);  // both "auto" values
}

TEST_CASE("bad DeepSpeed configs are InputErrors naming the file, the key and the value") {
  CHECK_THROWS_WITH(import_deepspeed(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3})", "ds.json", 0),
                    Catch::Contains("not a multiple of"));
  CHECK_THROWS_WITH(import_deepspeed(R"({"train_batch_size": 64, "gradient_accumulation_steps": 3})", "ds.json", 8),
                    Catch::Contains("ds.json: train_batch_size 64 != train_micro_batch_size_per_gpu"));
  CHECK_THROWS_WITH(import_deepspeed(R"({"zero_optimization": {"stage": "3"}})", "ds.json", 8),
                    "ds.json: /zero_optimization/stage: expected 0, 1, 2 or 3, got \"3\"");
  CHECK_THROWS_WITH(import_deepspeed(R"({"train_batch_size": 1.5})", "ds.json", 8), Catch::Contains("/train_batch_size: expected an integer"));
  CHECK_THROWS_WITH(import_deepspeed("{\"stage\": ", "ds.json", 8), Catch::Contains("ds.json: malformed JSON"));
  CHECK_THROWS_WITH(import_deepspeed("{}", "ds.json", 0), Catch::Contains("the GPU count is not in the config"));
}

TEST_CASE("a torchtitan job TOML imports its mesh and kernels, and lists the keys not modeled") {
  const ModelSpec m = resolve_model("llama3-8b");
  const ImportedJob job = import_torchtitan(read_data("torchtitan_llama3_8b.toml"), "job.toml", m, 64);
  const ParallelPlan& p = job.plan;
  CHECK((p.dp == 8 && p.tp == 8 && p.zero_stage == 3 && p.sequence_parallel));
  CHECK((p.micro_batch == 2 && p.global_batch == 16 && p.recompute == Recompute::kSelectiveOp));
  CHECK((p.norm == NormKernel::kFused && p.cross_entropy == LossKernel::kCompiled));  // compile.enable, components default: model and loss
  CHECK(job.seq_len == 8192);
  CHECK(job.framework == "torchtitan");
  // [job], [optimizer], [profiling], the dataset and steps: accepted quietly.
  CHECK(p.tp_comm_overlap);  // parallelism.enable_async_tensor_parallel
  CHECK(job.not_modeled.empty());
  CHECK(import_job(ImportFormat::kTorchtitan, read_data("torchtitan_llama3_8b.toml"), "job.toml", m, 64).file == "job.toml");
}

TEST_CASE("Megatron-LM's --fp8-recipe: tensorwise, blockwise and mxfp8 are read into the plan, a custom one is listed as priced as delayed") {
  const ModelSpec m = resolve_model("llama3-8b");
  const ImportedJob tensorwise = import_megatron("--bf16 --fp8-format hybrid --fp8-recipe tensorwise", "args", m, 8);
  CHECK(tensorwise.plan.precision == Precision::kFp8);
  CHECK(tensorwise.plan.fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(tensorwise.not_modeled.empty());
  const ImportedJob delayed = import_megatron("--bf16 --fp8-format hybrid --fp8-recipe delayed", "args", m, 8);
  CHECK(delayed.plan.fp8_recipe == Fp8Recipe::kDelayed);
  const ImportedJob blockwise = import_megatron("--bf16 --fp8-format e4m3 --fp8-recipe blockwise", "args", m, 8);
  CHECK(blockwise.plan.fp8_recipe == Fp8Recipe::kBlockwise);
  CHECK(blockwise.not_modeled.empty());
  CHECK_THAT(export_plan(&m, blockwise.plan, 8, ExportTarget::kMegatron), Catch::Contains("--fp8-format e4m3 --fp8-recipe blockwise"));
  const ImportedJob custom = import_megatron("--bf16 --fp8-format e4m3 --fp8-recipe custom", "args", m, 8);
  CHECK(custom.plan.fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(custom.not_modeled == std::vector<std::string>{"--fp8-recipe custom (priced as delayed)"});
  // Without --fp8-format the run is not FP8: the recipe names nothing priced.
  CHECK(import_megatron("--bf16 --fp8-recipe tensorwise", "args", m, 8).plan.fp8_recipe == Fp8Recipe::kDelayed);
  // MXFP8 is its own precision; --fp4-format takes --fp4-recipe nvfp4 (Megatron-Core's default).
  const ImportedJob mxfp8 = import_megatron("--bf16 --fp8-format e4m3 --fp8-recipe mxfp8 --fp8-param-gather", "args", m, 8);
  CHECK(mxfp8.plan.precision == Precision::kMxfp8);
  CHECK(mxfp8.plan.fp8_params);
  CHECK(mxfp8.not_modeled.empty());
  const ImportedJob nvfp4 = import_megatron("--bf16 --fp4-format e2m1 --fp4-param-gather", "args", m, 8);
  CHECK(nvfp4.plan.precision == Precision::kNvfp4);
  CHECK(nvfp4.not_modeled == std::vector<std::string>{"--fp4-param-gather (NVFP4 primary weights: priced as 16-bit weights cast every iteration)"});
  // Exported back as Megatron writes them.
  CHECK_THAT(export_plan(&m, mxfp8.plan, 8, ExportTarget::kMegatron), Catch::Contains("--fp8-format e4m3 --fp8-recipe mxfp8") && Catch::Contains("--fp8-param-gather"));
  CHECK_THAT(export_plan(&m, nvfp4.plan, 8, ExportTarget::kMegatron), Catch::Contains("--fp4-format e2m1 --fp4-recipe nvfp4"));
  // Gradients in bf16: read and written back.
  const ImportedJob bf16_grads = import_megatron("--bf16 --grad-reduce-in-bf16", "args", m, 8);
  CHECK_FALSE(bf16_grads.plan.grad_reduce_in_fp32);
  CHECK(bf16_grads.not_modeled.empty());
  CHECK(import_megatron("--bf16", "args", m, 8).plan.grad_reduce_in_fp32);
  CHECK_THAT(export_plan(&m, bf16_grads.plan, 8, ExportTarget::kMegatron), Catch::Contains("--grad-reduce-in-bf16"));
  // The unfused softmax and bias-GELU: read into the plan, written back.
  const ImportedJob unfused = import_megatron("--bf16 --no-masked-softmax-fusion --no-bias-gelu-fusion", "args", m, 8);
  CHECK_FALSE(unfused.plan.softmax_fusion);
  CHECK_FALSE(unfused.plan.bias_gelu_fusion);
  CHECK(unfused.not_modeled.empty());
  CHECK_THAT(export_plan(&m, unfused.plan, 8, ExportTarget::kMegatron),
             Catch::Contains("--no-masked-softmax-fusion") && Catch::Contains("--no-bias-gelu-fusion"));
  // Transformer Engine's op fuser (the experts' MLP): read into the plan, written back.
  const ImportedJob fuser = import_megatron("--bf16 --use-transformer-engine-op-fuser", "args", m, 8);
  CHECK(fuser.plan.te_op_fuser);
  CHECK(fuser.not_modeled.empty());
  CHECK_FALSE(unfused.plan.te_op_fuser);
  CHECK_THAT(export_plan(&m, fuser.plan, 8, ExportTarget::kMegatron), Catch::Contains("--use-transformer-engine-op-fuser"));
  // CPU activation offloading: read into the plan, written back.
  const ImportedJob offload = import_megatron("--bf16 --cpu-offloading --cpu-offloading-num-layers 4", "args", m, 8);
  CHECK(offload.plan.cpu_offload_layers == 4);
  CHECK(offload.not_modeled.empty());
  CHECK_THAT(export_plan(&m, offload.plan, 8, ExportTarget::kMegatron), Catch::Contains("--cpu-offloading-num-layers 4"));
}
