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
cli_test("bad: --price item that is not a number" RC 2 MATCH "--price.*h100-sxm-80gb=x.*finite number above 0" ARGS
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
