# Command-line tests of the first questions a new user asks (issue "the first hour"): each failed
# before its fix. Uses cli_test from cli_tests.cmake.

# Prices per GPU type; the network from the GPU's reference server.
cli_test("bad: one bare --price for several GPU types is refused" RC 2
  MATCH "--price 2.5: one price for 2 GPU types" "hint: give each type its price: --price h100-sxm-80gb=...,h200-sxm-141gb=..."
  ARGS search --model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --objective cost --price 2.5)
cli_test("bad: --price naming a GPU type not searched" RC 2
  MATCH "--price: a100-sxm-80gb is not one of the GPU types asked for" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --price h100-sxm-80gb=2.5,a100-sxm-80gb=1.5)
cli_test("bad: --price leaving a searched GPU type out" RC 2
  MATCH "--price gives no price for h200-sxm-141gb" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --price h100-sxm-80gb=2.5)
cli_test("bad: --price item that is not a number" RC 2 MATCH "--price.*h100-sxm-80gb=x.*finite number from 0" ARGS
  predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 8 --price h100-sxm-80gb=x)
cli_test("search prices each GPU type at its own --price: H100 at 2.50 beats H200 at 3.80 on cost" RC 0
  MATCH "1  h100-sxm-80gb" "\\$2\\.50/GPU-hour" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --objective cost
         --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80 --top 3)
cli_test("predict with --gpu alone takes the network of the GPU's reference server" RC 0
  MATCH "8 per node, 400 Gb/s per GPU across nodes: the GPU's reference server" ARGS
  predict --model llama3-8b --gpu h100-sxm-80gb --gpus 16 --global-batch 64)
cli_test("predict --format json says where the network figure comes from" RC 0
  MATCH "\"inter_node_gbps_per_gpu\": 200" "\"inter_node_gbps_source\": \"the GPU's reference server\"" ARGS
  predict --model llama3-8b --gpu a100-sxm-80gb --gpus 16 --global-batch 64 --format json)

# The search space is the framework's: --framework, --export and --from leave out what it cannot run.
cli_test("search --framework megatron-core --export megatron ranks and exports a plan Megatron runs" RC 0
  MATCH "framework: --export megatron: plans Megatron-LM cannot run are left out" "left out \\([0-9,]+: Megatron-LM has no ZeRO-2\\)"
        "--tensor-model-parallel-size" ARGS
  search --framework megatron-core --model llama3-8b --gpu h100-sxm-80gb --gpus 128 --global-batch 512 --export megatron --top 3)
cli_test("search --framework torchtitan --export torchtitan ranks and exports a plan torchtitan runs" RC 0
  MATCH "torchtitan has no ZeRO-1 " "data_parallel_shard_degree = 128" ARGS
  search --framework torchtitan --model llama3-8b --gpu h100-sxm-80gb --gpus 128 --global-batch 512 --export torchtitan --top 3)
cli_test("search --format json counts the plans the framework cannot run" RC 0
  MATCH "\"left_out\": ." "\"Megatron-LM has no ZeRO-2\": [0-9]+" "\"framework_restrictions\": ." ARGS
  search --export megatron --model llama3-8b --gpu h100-sxm-80gb --gpus 128 --global-batch 512 --top 1 --format json)
cli_test("search --from megatron compares the job with plans Megatron runs" RC 0
  MATCH "framework: --from megatron: plans Megatron-LM cannot run are left out" "Imported plan" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb --from megatron ${CMAKE_CURRENT_SOURCE_DIR}/data/import/megatron_llama3_8b.sh --top 2)

# The answer at the top: days, $, goodput, deadline; each GPU type's best at its own price; accuracy.
cli_test("search answers the H100-or-H200 question in one command, at the top" RC 0
  MATCH "^Answer \\(objective cost\\): .* on 128 x h100-sxm-80gb at \\$2\\.50/GPU-hour" "training 2 Ttokens: [0-9.]+ days, \\$[0-9.]+ k; goodput"
        "deadline 30\\.0 days: met" "h200-sxm-141gb \\(\\$3\\.80/GPU-hour, 128 GPUs\\): .*more by the objective"
        "accuracy: datasheet model validated on" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --objective cost
         --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80 --train-tokens 2e12 --deadline-days 30 --top 3)
cli_test("search --format json carries the answer" RC 0
  MATCH "\"answer\": ." "\"best_per_gpu_type\": ." "\"deadline_met\": true" "\"accuracy\": \"datasheet model validated" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --objective cost
         --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80 --train-tokens 2e12 --deadline-days 30 --top 3 --format json)

# A search's header says the sequence length and tokens per iteration; --global-batch-tokens.
cli_test("search --global-batch-tokens 4M searches 512 sequences of 8192 and says so" RC 0
  MATCH "global batch 512 sequences of 8,192 tokens \\(4,194,304 tokens per iteration\\)" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb --gpus 64 --global-batch-tokens 4M --top 2)
cli_test("bad: search --global-batch-tokens that is not whole sequences" RC 2
  MATCH "4000000 tokens must be a whole number of sequences of 8192" "3997696 \\(488 sequences\\)" ARGS
  search --model llama3-8b --gpu h100-sxm-80gb --gpus 64 --global-batch-tokens 4000000)

# A plan file that leaves the kernels out gets the framework's (it states only what it holds).
cli_test("predict --plan FILE --framework megatron-deepspeed: the kernels the file leaves out are the framework's" RC 0
  MATCH "framework megatron-deepspeed: .*attention unfused" "ZeRO-0, recompute none, bf16, unfused attention" ARGS
  predict --model gpt3-1.3b --gpu a100-sxm-80gb --plan ${CMAKE_CURRENT_SOURCE_DIR}/data/plans/layout_only.json --framework megatron-deepspeed)

# A refused --trace-ranks all leaves no empty trace file behind.
add_test(NAME "cli: a refused --trace-ranks all leaves no trace file"
  COMMAND bash -c "rm -f \"$1\"; \"$0\" predict --model gpt3-175b --gpu a100-sxm-80gb --gpus 8192 --tp 8 --pp 8 --global-batch 8192 --trace \"$1\" --trace-ranks all; rc=$?; [ $rc -eq 2 ] && [ ! -e \"$1\" ]"
          $<TARGET_FILE:trainsim> ${CMAKE_CURRENT_BINARY_DIR}/trace_refused.json)
