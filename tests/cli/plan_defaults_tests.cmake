# Command-line tests of the batch a plan runs (model, predict): the filled-pipeline default and its
# echo, --global-batch-tokens, fit or not on a GPU (--gpu, --fail-if-oom), --save-plan, and the
# papercuts of the plan flags (Megatron spellings, did-you-mean, plural). Included by cli_tests.cmake.

# The default global batch fills the pipeline (pp micro-batches per DP rank) and says so.
cli_test("model: without --global-batch the pipeline is filled, pp micro-batches per DP rank" RC 0
  MATCH "micro-batch 1 \\(8 micro-batches per DP rank\\)" "global batch 16 sequences \\(default: dp 2 x micro-batch 1 x pp 8 micro-batches, the fewest that fill the pipeline"
        "seq len 8192 \\(the model's; --seq-len sets yours\\), 131,072 tokens per iteration" "0 \\(first\\) peak +15 +8\\.00"
  ARGS model --model llama3-405b --gpus 128 --tp 8 --pp 8)
cli_test("predict --format json echoes the batch: sequences, its default, seq len and tokens" RC 0
  MATCH "\"batch\": \\{" "\"global_batch\": 16" "\"global_batch_default\": \"dp 2 x micro-batch 1 x pp 8" "\"micro_batches\": 8"
        "\"seq_len\": 8192" "\"seq_len_source\": \"model\"" "\"tokens_per_iteration\": 131072"
  ARGS predict --model llama3-405b --gpu h100-sxm-80gb --gpus 128 --tp 8 --pp 8 --format json)
cli_test("predict: a stated global batch is echoed without a default" RC 0
  MATCH "global batch 64 sequences, seq len 8192 \\(the model's; --seq-len sets yours\\), 524,288 tokens per iteration"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 64)
cli_test("predict: the interleaved schedule's default global batch is a multiple of pp" RC 0
  MATCH "micro-batch 1 \\(4 micro-batches per DP rank\\)" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --pp 4 --vpp 2)
cli_test("model: one GPU, one micro-batch (singular)" RC 0 MATCH "= 1 GPU; micro-batch 1 \\(1 micro-batch per DP rank\\)"
  "global batch 1 sequence \\(default: dp 1 x micro-batch 1, one micro-batch per DP rank" ARGS model --model gpt2-124m)
cli_test("model: a Hugging Face config runs at max_position_embeddings, and says so" RC 0
  MATCH "seq len 131072 \\(max_position_embeddings of the Hugging Face config\\)" "hint: .*give --seq-len"
  ARGS model --model ${hf}/qwen2-0.5b)

# --global-batch-tokens: K and M are binary (Llama 3's "4M tokens" = 1024 x 4096).
cli_test("predict --global-batch-tokens 4M is 512 sequences of 8192" RC 0
  MATCH "global batch 512 sequences, seq len 8192 .*, 4,194,304 tokens per iteration"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch-tokens 4M)
cli_test("bad: --global-batch-tokens that is no whole number of sequences names the nearest" RC 2
  MATCH "--global-batch-tokens: 1000000 tokens must be a whole number of sequences of 8192 tokens"
        "hint: the nearest that are: 999424 \\(122 sequences\\) or 1007616 \\(123 sequences\\)"
  ARGS model --model llama3-8b --global-batch-tokens 1000000)
cli_test("bad: --global-batch-tokens with an unknown suffix" RC 2 MATCH "\"4G\" is not a token count" "e.g. 4M"
  ARGS model --model llama3-8b --global-batch-tokens 4G)
cli_test("bad: --global-batch and --global-batch-tokens together" RC 2
  MATCH "--global-batch and --global-batch-tokens both give the global batch" ARGS model --model llama3-8b --global-batch 8 --global-batch-tokens 64K)

# Fit or not: model --gpu answers it; --fail-if-oom turns the answer into an exit code.
cli_test("model --gpu says a plan does not fit" RC 0
  MATCH "on h100-sxm-80gb \\(79\\.6 GiB\\): DOES NOT FIT, [0-9.]+ GiB as the device reports on stage 0" "\"fits\": false|DOES NOT FIT"
  ARGS model --model llama3-405b --gpus 128 --tp 8 --pp 8 --gpu h100-sxm-80gb)
cli_test("model --gpu says a plan fits" RC 0 MATCH "on h100-sxm-80gb \\(79\\.6 GiB\\): fits"
  ARGS model --model llama3-8b --gpus 8 --zero 3 --gpu h100-sxm-80gb)
cli_test("model --gpu --format json has fits and the device memory" RC 0
  MATCH "\"fits\": false" "\"memory_device_gib\": " "\"gpu\": \"h100-sxm-80gb\""
  ARGS model --model llama3-405b --gpus 128 --tp 8 --pp 8 --gpu h100-sxm-80gb --format json)
cli_test("model --fail-if-oom exits 4 when the plan does not fit" RC 4 MATCH "DOES NOT FIT"
  ARGS model --model llama3-405b --gpus 128 --tp 8 --pp 8 --gpu h100-sxm-80gb --fail-if-oom)
cli_test("bad: model --fail-if-oom without a GPU" RC 2 MATCH "--fail-if-oom needs --gpu or --cluster"
  ARGS model --model llama3-8b --fail-if-oom)
cli_test("predict --fail-if-oom exits 4 when the plan does not fit" RC 4 MATCH "\"fits\": false"
  ARGS predict --model llama3-70b --gpu a100-sxm-80gb --gpus 8 --format json --fail-if-oom)
cli_test("predict --fail-if-oom exits 0 when the plan fits" RC 0 MATCH "iteration time"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --zero 3 --fail-if-oom)

# --save-plan writes what --plan reads; --plan also reads a search's JSON (its #1 plan).
cli_test("search --save-plan --save-plan-rank 2 writes the second plan" RC 0 MATCH "Best plans"
  ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 64 --top 3
       --save-plan ${CMAKE_CURRENT_BINARY_DIR}/saved_rank2_plan.json --save-plan-rank 2)
set_tests_properties("cli: search --save-plan --save-plan-rank 2 writes the second plan" PROPERTIES FIXTURES_SETUP saved_plan)
cli_test("predict --plan reads the plan search --save-plan wrote" RC 0 MATCH "dp 8 x tp 1 x pp 1, micro-batch 1 " "ZeRO-2" "iteration time  +6.395 s"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --plan ${CMAKE_CURRENT_BINARY_DIR}/saved_rank2_plan.json)
set_tests_properties("cli: predict --plan reads the plan search --save-plan wrote" PROPERTIES FIXTURES_REQUIRED saved_plan)
cli_test("predict --plan reads a search's JSON output: its #1 plan" RC 0
  MATCH "dp 2 x tp 2 x pp 2, micro-batch 1 \\(16 micro-batches per DP rank\\)" "ZeRO-1, recompute selective, SP"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --plan ${CMAKE_CURRENT_SOURCE_DIR}/data/plans/search_output.json)
cli_test("bad: search --save-plan-rank beyond the plans ranked" RC 2 MATCH "--save-plan-rank: 5 is beyond the 3 plans ranked"
  ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 64 --top 3
       --save-plan ${CMAKE_CURRENT_BINARY_DIR}/never_plan.json --save-plan-rank 5)
cli_test("bad: --plan of a trainsim output that holds no plan" RC 2 MATCH "/schema: a trainsim.model_catalog file holds no plan"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --plan ${PROJECT_SOURCE_DIR}/configs/models.json)

# Papercuts of the flags.
cli_test("Megatron-LM's spellings of the plan flags are accepted" RC 0
  MATCH "dp 2 x tp 2 x pp 2, micro-batch 2 \\(2 micro-batches per DP rank\\)" "global batch 8 sequences, seq len 4096 \\(--seq-len\\)"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
       --micro-batch-size 2 --global-batch-size 8 --seq-length 4096)
cli_test("bad: --pipline-parallel suggests --pipeline-parallel" RC 2 MATCH "did you mean --pipeline-parallel\\?"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --pipline-parallel 2)
cli_test("bad: --gpu h100 suggests every H100 of the catalog" RC 2
  MATCH "unknown GPU \"h100\" \\(did you mean \"h100-sxm-80gb\" or \"h100-sxm-96gb-500w\"\\?\\)"
  ARGS predict --model llama3-8b --gpu h100 --gpus 8)
cli_test("bad: an invalid plan's hint names the command's help and docs/, files the user has" RC 2
  MATCH "hint: `trainsim predict --help` lists the plan options; docs/plan-options.md"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 12 --tp 3)
