# Command-line tests: exit codes and messages of the real `trainsim` binary.
# cli_test(NAME RC <code> [MATCH <regex>...] ARGS <args>...)
set(cli_expect ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.sh)
set(bad ${CMAKE_CURRENT_SOURCE_DIR}/data/bad)
set(hf ${CMAKE_CURRENT_SOURCE_DIR}/data/hf)
function(cli_test name)
  cmake_parse_arguments(T "" "RC" "MATCH;ARGS" ${ARGN})
  add_test(NAME "cli: ${name}" COMMAND ${cli_expect} ${T_RC} ${T_MATCH} -- $<TARGET_FILE:trainsim> ${T_ARGS})
endfunction()

# Working commands.
cli_test("model prints a readable table for llama3-8b" RC 0
  MATCH "8,030,261,248" "Memory per GPU" ARGS model --model llama3-8b)
cli_test("model --format json has the documented keys" RC 0
  MATCH "\"schema\": \"trainsim.model\"" "\"memory_peak_gib\"" "\"context\"" "\"inputs\"" "\"weights_gib\""
  ARGS model --model gpt3-175b --gpus 1024 --tp 8 --pp 8 --global-batch 1536 --format json)
cli_test("model reads a Hugging Face config.json outside the catalog" RC 0
  MATCH "\"total\": 494032768" ARGS model --model ${hf}/qwen2-0.5b/config.json --seq-len 4096 --format json)
cli_test("model reads a Hugging Face model folder through its config.json" RC 0
  MATCH "\"total\": 494032768" ARGS model --model ${hf}/qwen2-0.5b --seq-len 4096 --format json)
cli_test("catalog lists the built-in models" RC 0 MATCH "llama3-405b" "mixtral-8x7b" "gpt-tiny" ARGS catalog)
cli_test("catalog lists the built-in GPUs and clusters" RC 0
  MATCH "h200-sxm-141gb" "a100-sxm-40gb" "dgx-h100" "989\\.4" ARGS catalog)
cli_test("catalog lists the Blackwell GPUs and the NVL72 rack as one 72-GPU NVLink domain" RC 0
  MATCH "b200-sxm-180gb +blackwell +2250\\.0 +4500\\.0" "gb300-nvl72 +blackwell" "dgx-b200 +b200-sxm-180gb +8 +400"
        "gb200-nvl72 +gb200-nvl72 +72 +400" ARGS catalog)
cli_test("catalog --format json" RC 0 MATCH "\"schema\": \"trainsim.catalog\"" "\"gpus\": " "\"clusters\": "
  "\"peak_bf16_tflops\": 989\\.4" "\"inter_node_gbps_per_gpu\": 400" "\"generation\": \"hopper\"" "\"reference_efficiency\": \"h200\""
  ARGS catalog --format json)
cli_test("--help exits 0" RC 0 MATCH "Subcommands" ARGS --help)
cli_test("report writes a self-contained HTML report with charts" RC 0 MATCH "2 section.s., 5 chart.s."
  ARGS report ${CMAKE_CURRENT_SOURCE_DIR}/data/compare/prediction.json ${CMAKE_CURRENT_SOURCE_DIR}/data/compare/measured_close.json
       --out ${CMAKE_CURRENT_BINARY_DIR}/report.html)
cli_test("report --out .md writes the charts as SVG files beside it" RC 0 MATCH "report-1-2.svg" "\"charts\": 2"
  ARGS report ${CMAKE_CURRENT_SOURCE_DIR}/data/compare/prediction.json --out ${CMAKE_CURRENT_BINARY_DIR}/report.md --format json)
cli_test("bad: report of a file that is not a trainsim output" RC 2 MATCH "schema .trainsim.model_catalog. is not charted" "hint: the report takes"
  ARGS report ${PROJECT_SOURCE_DIR}/configs/models.json --out ${CMAKE_CURRENT_BINARY_DIR}/x.html)
cli_test("bad: report to a file that is neither Markdown nor HTML" RC 2 MATCH "--out x.pdf: the report is Markdown"
  ARGS report ${CMAKE_CURRENT_SOURCE_DIR}/data/compare/prediction.json --out x.pdf)
cli_test("predict prints a breakdown for GPT-3 175B on 1024 A100s" RC 0
  MATCH "iteration time" "pipeline bubble" "TP communication"
  ARGS predict --model gpt3-175b --gpu a100-sxm-80gb --gpus 1024 --tp 8 --pp 8 --micro-batch 1 --global-batch 1536)
cli_test("predict --format json has every key of INTERFACE.md" RC 0
  MATCH "\"schema\": \"trainsim.prediction\"" "\"fits\"" "\"iteration_time_s\"" "\"tokens_per_s\"" "\"tokens_per_s_per_gpu\""
        "\"model_tflops_per_gpu\"" "\"hardware_tflops_per_gpu\"" "\"mfu\"" "\"hfu\"" "\"memory_peak_gib\""
        "\"weights_gib\"" "\"gradients_gib\"" "\"optimizer_gib\"" "\"activations_gib\"" "\"other_gib\""
        "\"compute_s\"" "\"tp_comm_exposed_s\"" "\"dp_comm_exposed_s\"" "\"pp_comm_exposed_s\"" "\"bubble_s\""
        "\"optimizer_s\"" "\"usd_per_gpu_hour\"" "\"usd_per_iteration\"" "\"inputs\"" "\"context\""
  ARGS predict --model gpt3-175b --gpu a100-sxm-80gb --gpus 1024 --tp 8 --pp 8 --micro-batch 1 --global-batch 1536 --format json)
cli_test("a plan that does not fit is an answer, not an error" RC 0
  MATCH "\"fits\": false" "\"infeasible_reason\": \"needs [0-9.]+ GiB on pipeline stage 0 \\([0-9.]+ of tensors, [0-9.]+ CUDA context, workspace and NCCL buffers\\), the GPU has 80.0 GiB\""
  ARGS predict --model llama3-70b --gpu a100-sxm-80gb --gpus 8 --format json)
cli_test("predict --trace --trace-ranks all draws every rank" RC 0 MATCH "trace written to"
  ARGS predict --model gpt3-1.3b --gpu h100-sxm-80gb --gpus 8 --tp 2 --pp 2 --dp 2 --global-batch 8
       --trace ${CMAKE_CURRENT_BINARY_DIR}/trace_all_ranks.json --trace-ranks all)
cli_test("bad: --trace-ranks all above its rank limit" RC 2 MATCH "--trace-ranks: all .8192 ranks" "4096 ranks" "hint: use --trace-ranks classes"
  ARGS predict --model gpt3-1.3b --gpu h100-sxm-80gb --gpus 8192 --dp 8192 --global-batch 8192
       --trace ${CMAKE_CURRENT_BINARY_DIR}/trace_too_many.json --trace-ranks all)
cli_test("bad: predict without hardware" RC 2 MATCH "missing --gpu or --cluster" ARGS predict --model gpt2-124m --gpus 1)
cli_test("bad: unknown GPU lists the known ones" RC 2 MATCH "did you mean \"h100-sxm-80gb\"" "a100-sxm-40gb"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80 --gpus 1)
cli_test("bad: fp8 on an A100" RC 2 MATCH "fp8 is not supported by a100-sxm-80gb"
  ARGS predict --model gpt2-124m --gpu a100-sxm-80gb --gpus 1 --precision fp8)
cli_test("bad: invalid plan names every violated constraint" RC 2
  MATCH "tp \\(3\\) must divide heads" "global_batch \\(10\\) must be a multiple of dp x micro_batch"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 12 --tp 3 --global-batch 10 --micro-batch 4)

# Bad input: one file or flag per defect; exit 2 and a message naming the key, value and constraint.
cli_test("bad: missing file" RC 2 MATCH "nope/missing.json: cannot open" ARGS model --model nope/missing.json)
cli_test("bad: malformed JSON" RC 2 MATCH "malformed.json: malformed JSON at line 4" ARGS model --model ${bad}/malformed.json)
cli_test("bad: unknown key" RC 2 MATCH "/hiden: unknown key \"hiden\" \\(did you mean \"hidden\"\\?\\)"
  ARGS model --model ${bad}/unknown_key.json)
cli_test("bad: negative size" RC 2 MATCH "/layers: layers \\(-4\\) must be >= 1" ARGS model --model ${bad}/negative_layers.json)
cli_test("bad: zero size" RC 2 MATCH "/heads: heads \\(0\\) must be >= 1" ARGS model --model ${bad}/zero_heads.json)
cli_test("bad: wrong type" RC 2 MATCH "/hidden: expected an integer >= 1, got a string \\(\"4096\"\\)"
  ARGS model --model ${bad}/string_hidden.json)
cli_test("bad: missing key" RC 2 MATCH "/vocab: missing required key \"vocab\"" ARGS model --model ${bad}/missing_vocab.json)
cli_test("bad: kv_heads does not divide heads" RC 2 MATCH "kv_heads \\(6\\) must divide heads \\(32\\)"
  ARGS model --model ${bad}/kv_heads_not_dividing.json)
cli_test("bad: unsupported HF architecture" RC 2 MATCH "\"falcon\" is not a supported architecture" "supported: llama"
  ARGS model --model ${bad}/hf_falcon/config.json)
cli_test("bad: unknown built-in model" RC 2 MATCH "unknown model \"llama3-8\" \\(did you mean \"llama3-8b\"\\?\\)"
  ARGS model --model llama3-8)
cli_test("bad: tp does not divide heads" RC 2 MATCH "tp \\(3\\) must divide heads \\(32\\) of model \"llama3-8b\""
  ARGS model --model llama3-8b --tp 3)
cli_test("bad: gpus not a multiple of tp x pp" RC 2 MATCH "gpus \\(12\\) must be a multiple of tp x pp x cp \\(8\\)"
  ARGS model --model llama3-8b --gpus 12 --tp 8)
cli_test("bad: zero or negative flag" RC 2 MATCH "--tp" ARGS model --model llama3-8b --tp 0)
cli_test("bad: plan file with an unknown key" RC 2 MATCH "/micro_bach: unknown key \"micro_bach\" \\(did you mean \"micro_batch\"\\?\\)"
  ARGS model --model llama3-8b --plan ${bad}/plan_unknown_key.json)
cli_test("bad: unknown option value" RC 2 MATCH "recompute" ARGS model --model llama3-8b --recompute partial)

set(runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/published-runs.json)
cli_test("validate reports per-group and held-out errors" RC 0
  MATCH "korthikanti_2022_table5" "held-out half" "megatron-sc21-t1-1008.0B" ARGS validate --runs ${runs} --tolerance 0.2)
cli_test("validate predicts every published run" RC 0 MATCH "all runs  *332  *0" ARGS validate --runs ${runs} --summary --tolerance 0.2)
cli_test("validate lists the runs it cannot simulate with their reason and goes on" RC 0
  MATCH "unsupported runs, by reason" "GPU mi300x is not in the catalog" "all runs  *0  *1"
  ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/unsupported-only.json --summary --tolerance 0.2)
cli_test("search stops simulating once the rest screen over 5% behind the plans shown, and says so" RC 0
  MATCH "[0-9]+ simulated \\(the rest screened over 5% behind the plans shown\\)"
  ARGS search --model llama3-70b --cluster dgx-h100 --gpus 256 --global-batch 512)
cli_test("search --simulate-all simulates every one of --simulate-best" RC 0
  MATCH "feasible, [0-9,]+ do not fit in memory; 50 simulated; "
  ARGS search --model llama3-70b --cluster dgx-h100 --gpus 256 --global-batch 512 --simulate-all --simulate-best 50)
cli_test("search --no-uneven-pipeline names the pipelines it leaves out (Llama 3.1 405B at pp 4 to 128)" RC 0
  MATCH "pp 4, 8, 16, 32, 64, 128 not searched: 126 layers split over them only with the embedding and the loss" "left out by --no-uneven-pipeline"
  ARGS search --model llama3-405b --cluster dgx-h100 --gpus 256 --global-batch 128 --no-uneven-pipeline)
cli_test("search proposes Llama 3.1 405B at pp 16 with the embedding and loss counted as layers, by default and with --uneven-pipeline" RC 0
  MATCH "Answer \\(objective time\\): dp1 tp8 pp16 cp2 v8"
  ARGS search --model llama3-405b --cluster dgx-h100 --gpus 256 --global-batch 128)
cli_test("search --uneven-pipeline (the default) still parses" RC 0
  MATCH "Answer \\(objective time\\): dp1 tp8 pp16 cp2 v8"
  ARGS search --model llama3-405b --cluster dgx-h100 --gpus 256 --global-batch 128 --uneven-pipeline)
cli_test("validate prints the same plan on two GPU types and in two precisions beside the groups" RC 0
  MATCH "same plan, two GPU types  *41 " "same plan, two precisions  *11 " "mbridge-25.09-llama3-8b-fp8-b200-8gpu  *mbridge-25.09-llama3-8b-fp8-gb200-8gpu"
  ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/blackwell-runs.json --tolerance 10)
cli_test("validate --format json gives the pairs with both ratios" RC 0
  MATCH "\"pairs\": {" "\"gpu\": {" "\"precision\": {" "\"measured_ratio\"" "\"predicted_ratio\"" "\"within_ten_percent\""
  ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/blackwell-runs.json --format json --tolerance 10)
cli_test("validate predicts MXFP8 and NVFP4 runs on Blackwell" RC 0 MATCH "all runs  *3  *0"
  ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/block-scaled-precisions.json --summary --tolerance 10)
cli_test("bad: NVFP4 on an H100 names the precisions it has" RC 2
  MATCH "nvfp4 is not supported by h100-sxm-80gb" "Blackwell's block-scaled tensor cores" "this GPU trains in bf16, fp16, fp32, fp8"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --precision nvfp4)
cli_test("predict prices MXFP8 and NVFP4 on a B200 and names the GEMM records" RC 0
  MATCH "MAMF FP8 x 1.81 \\(NVFP4 kernels, B300\\)"
  ARGS predict --model llama3-8b --gpu b200-sxm-180gb --gpus 8 --precision nvfp4)
cli_test("validate --format json has the documented keys" RC 0
  MATCH "\"schema\": \"trainsim.validation\"" "\"predicted_tokens_per_s_per_gpu\"" "\"measured_tokens_per_s_per_gpu\""
        "\"error\"" "\"predicted_memory_peak_gib\"" "\"predicted_memory_reserved_gib\"" "\"memory_error\"" "\"predicted_fits\""
        "\"defaults_used\"" "\"mean_abs_error\"" "\"unsupported\": 0"
  ARGS validate --runs ${runs} --format json --tolerance 0.2)
cli_test("validate --format json gives an unsupported run's status and reason" RC 0
  MATCH "\"status\": \"unsupported\"" "\"reason\"" "\"unsupported\": 1"
  ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/unsupported-only.json --format json --tolerance 0.2)
cli_test("validate --groups keeps those groups and --cross-validate refits without each" RC 0
  MATCH "leave-one-group-out" "shipped constants: mean .error." "bloom  *1  *10\\.0%" "mean over groups"
  ARGS validate --runs ${runs} --groups bloom,zero_bubble_pp_a100 --cross-validate --summary)
cli_test("bad: validate --groups names a group the file does not have" RC 2
  MATCH "--groups: no group \"blooom\"" "groups in the runs files: megatron_sc21_table1" ARGS validate --runs ${runs} --groups blooom)
cli_test("version-1 published-run files are still read" RC 0
  MATCH "nemo_launcher_a100" ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/published-runs-v1.json --summary --tolerance 0.2)
cli_test("validate exits 3 over its tolerance" RC 3 MATCH "over the tolerance" ARGS validate --runs ${runs} --tolerance 0.01)

set(plans ${CMAKE_CURRENT_SOURCE_DIR}/data/plans)
cli_test("search ranks plans and counts pruned candidates" RC 0
  MATCH "plans screened" "do not fit in memory" "Best plans" "Pareto front" "mem GiB  dev GiB"
  ARGS search --model llama3-70b --gpu h100-sxm-80gb --gpus 64 --global-batch 128 --top 3)
cli_test("search --format json has evaluated, feasible, elapsed_s and plans" RC 0
  MATCH "\"schema\": \"trainsim.search\"" "\"evaluated\"" "\"feasible\"" "\"elapsed_s\"" "\"plans\"" "\"iteration_time_s\""
  ARGS search --model gpt3-6.7b --gpu a100-sxm-80gb --gpus 16 --global-batch 64 --format json)
cli_test("search compares GPU types for a token count and a deadline" RC 0
  MATCH "a100-sxm-80gb x 32" "h200-sxm-141gb x 32" "days" "\\$ total"
  ARGS search --model gpt3-6.7b --gpu a100-sxm-80gb,h200-sxm-141gb --gpus 32 --global-batch 256 --train-tokens 3e11
       --deadline-days 60 --objective cost --top 4)
cli_test("search --precision bf16,fp8 searches each precision and skips a GPU without FP8" RC 0
  MATCH "h100-sxm-80gb x 16 \\(8 per node" "h100-sxm-80gb x 16, fp8 \\(8 per node" "a100-sxm-80gb: fp8 not searched" " fp8 "
  ARGS search --model llama3-8b --gpu h100-sxm-80gb,a100-sxm-80gb --gpus 16 --global-batch 128 --precision bf16,fp8 --top 3)
cli_test("bad: search --precision with an unknown member" RC 2 MATCH "bf16,fp9 is not a precision"
  ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 16 --global-batch 128 --precision bf16,fp9)
cli_test("search --moe-dispatcher alltoall,allgather,flex tries each dispatcher on the EP plans" RC 0
  MATCH "Best plans" "ep[0-9]+:(ag|flex)"
  ARGS search --model qwen3-30b-a3b --gpu h100-sxm-80gb --gpus 64 --global-batch 512 --top 20 --moe-dispatcher alltoall,allgather,flex)
cli_test("search --zero-bubble zb-1p,zb-v tries Zero Bubble schedules on the pipelined plans" RC 0
  MATCH "Best plans" " zb-v " " zb-1p "
  ARGS search --model gpt3-13b --gpu a100-sxm-80gb --gpus 8 --global-batch 64 --top 400 --zero-bubble zb-1p,zb-v)
cli_test("search --zero-bubble says which schedule no plan can run, and why" RC 0
  MATCH "h200-sxm-141gb x 15: zb-v not searched: its two chunks per rank split 105 layers over none of pp 3, 5, 15"
  ARGS search --model megatron-529.6b --gpu h200-sxm-141gb --gpus 15 --global-batch 15 --top 2 --zero-bubble zb-1p,zb-v)
cli_test("search: when no plan fits it names the closest and what it needs, and does not suggest ZeRO (searched)" RC 0
  MATCH "h200-sxm-141gb x 15: the closest to fitting, dp1 tp1 pp15 " "GiB per GPU \\(tensors, CUDA context, NCCL\\) of 140.4"
        "No plan is left to rank" "Try more GPUs or a GPU with more memory[.]"
  ARGS search --model megatron-529.6b --gpu h200-sxm-141gb --gpus 15 --global-batch 15 --top 2)
cli_test("bad: search --zero-bubble with a schedule that is not Zero Bubble" RC 2 MATCH "zb-v,1f1b is not a Zero Bubble schedule"
  ARGS search --model gpt3-13b --gpu a100-sxm-80gb --gpus 8 --global-batch 64 --zero-bubble zb-v,1f1b)
cli_test("search: a model with sliding windows gets CP plans over all_gather, a2a when asked" RC 0
  MATCH "cp[0-9]+:a2a"
  ARGS search --model gpt-oss-20b --seq-len 65536 --gpu h100-sxm-80gb --gpus 16 --global-batch 16 --top 3 --cp-comm a2a)
cli_test("bad: search --recompute-modules moe_act for a dense model" RC 2 MATCH "need experts of model \"llama3-8b\""
  ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 16 --global-batch 64 --recompute-modules moe_act)
cli_test("search --export megatron prints the best plan's arguments" RC 0
  MATCH "--tensor-model-parallel-size" "--global-batch-size 64"
  ARGS search --model gpt3-6.7b --gpu a100-sxm-80gb --gpus 16 --global-batch 64 --top 1 --export megatron)
cli_test("export a plan file to Megatron-LM" RC 0 MATCH "--pipeline-model-parallel-size 4" "--num-layers-per-virtual-pipeline-stage 4"
  ARGS export ${plans}/llama3-70b-tp8-pp4.json --model llama3-70b --to megatron)
cli_test("export a plan file to torchrun" RC 0 MATCH "torchrun --nnodes 32" ARGS export ${plans}/llama3-70b-tp8-pp4.json --model llama3-70b --to torchrun)
cli_test("bad: export to DeepSpeed with pipeline stages" RC 2 MATCH "cannot express tp 8 / pp 4"
  ARGS export ${plans}/llama3-70b-tp8-pp4.json --model llama3-70b --to deepspeed)
cli_test("predict --from nemo reads NeMo-Megatron-Launcher's GPT-3 5B config: block 0 recomputes no layer" RC 0
  MATCH "dp 128 x tp 1 x pp 1, micro-batch 2 " "global batch 2048 sequences" "recompute full \\(block 0\\)" "ZeRO-1"
        "known, not modeled \\(the prediction may be off\\): model.ffn_hidden_size"
  ARGS predict --model ${CMAKE_SOURCE_DIR}/tests/data/models/gpt3-5b-nemo.json --gpu a100-sxm-80gb
       --from nemo ${CMAKE_SOURCE_DIR}/tests/data/import/nemo_gpt3_5b.yaml)
cli_test("predict --from nemo reads a Megatron-Bridge config: PP 2 x EP 8, FP8, moe_act and layernorm recomputation" RC 0
  MATCH "dp 8 x tp 1 x pp 2, ep 8" "recompute selective \\(moe_act,layernorm\\)" "fp8"
  ARGS predict --model qwen3-30b-a3b --gpu h100-sxm-80gb --gpus 16 --from nemo ${CMAKE_SOURCE_DIR}/tests/data/import/megatron_bridge_qwen3_30b.yaml)
cli_test("bad: search without a GPU count" RC 2 MATCH "give --gpus N" ARGS search --model gpt2-124m --gpu h100-sxm-80gb --global-batch 8)
cli_test("bad: a deadline without a token count" RC 2 MATCH "need --train-tokens"
  ARGS search --model gpt2-124m --gpu h100-sxm-80gb --gpus 8 --global-batch 8 --deadline-days 3)
cli_test("predict with context parallelism shows cp and prices the KV ring" RC 0
  MATCH "dp 8 x tp 1 x pp 1 x cp 2" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 16 --cp 2 --global-batch 16)
cli_test("export writes --context-parallel-size" RC 0 MATCH "--context-parallel-size 2"
  ARGS export ${plans}/llama3-70b-tp8-cp2.json --to megatron)
cli_test("bad: predict context parallelism with unfused attention (Megatron-Core runs a fused ring only)" RC 2
  MATCH "cp: context parallelism runs fused .flash. ring attention" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 16 --cp 2
  --global-batch 16 --attention unfused)
cli_test("bad: context parallelism needs 2 x cp chunks of the sequence" RC 2
  MATCH "cp .3. needs seq_len .8192. divisible by 2 x cp" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 24 --cp 3 --global-batch 8)
cli_test("bad: export to Megatron-LM needs pp x vpp to divide the layers" RC 2
  MATCH "pp x vpp .12. divides neither the layers .80." ARGS export ${plans}/llama3-70b-pp4-vpp3.json --model llama3-70b --to megatron)
cli_test("predict places layers that pp x vpp does not divide" RC 0
  MATCH "pp 4 .vpp 3." ARGS predict --model llama3-70b --gpu h100-sxm-80gb --plan ${plans}/llama3-70b-pp4-vpp3.json)
cli_test("export without a model writes the parallelism arguments" RC 0 MATCH "^--tensor-model-parallel-size 8"
  ARGS export ${plans}/llama3-70b-tp8-pp4-no-vpp.json --to megatron)

# Profiles: calibrate on this machine, predict with it, and bad profiles (one defect each).
set(profiles ${CMAKE_CURRENT_SOURCE_DIR}/data/profiles)
set(bad_profiles ${CMAKE_CURRENT_SOURCE_DIR}/data/bad_profiles)
add_test(NAME "cli: calibrate cpu --quick writes a profile"
  COMMAND ${cli_expect} 0 "GEMM fp32" "memory copy" "profile written" -- $<TARGET_FILE:trainsim> calibrate cpu --quick
          --out ${CMAKE_CURRENT_BINARY_DIR}/cpu-quick.json)
set_tests_properties("cli: calibrate cpu --quick writes a profile" PROPERTIES FIXTURES_SETUP cpu_profile)
add_test(NAME "cli: calibrate cpu under mpirun measures MPI collectives"
  COMMAND ${cli_expect} 0 "all-reduce x2" "send-recv x2" -- ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
          --allow-run-as-root --oversubscribe $<TARGET_FILE:trainsim> calibrate cpu --quick
          --out ${CMAKE_CURRENT_BINARY_DIR}/cpu-mpi.json)
add_test(NAME "cli: predict on the host with its measured profile"
  COMMAND ${cli_expect} 0 "cost model: profile" "iteration time" -- $<TARGET_FILE:trainsim> predict --model gpt-tiny
          --gpu cpu --profile ${CMAKE_CURRENT_BINARY_DIR}/cpu-quick.json --gpus 1 --micro-batch 2 --global-batch 2
          --attention unfused --precision fp32)
set_tests_properties("cli: predict on the host with its measured profile" PROPERTIES FIXTURES_REQUIRED cpu_profile)
add_test(NAME "cli: bad: a what-if on the host, which has no datasheet"
  COMMAND ${cli_expect} 2 "--peak-tflops changes a datasheet figure, and --gpu cpu has no datasheet" -- $<TARGET_FILE:trainsim>
          predict --model gpt-tiny --gpu cpu --profile ${CMAKE_CURRENT_BINARY_DIR}/cpu-quick.json --gpus 1 --micro-batch 2
          --global-batch 2 --attention unfused --precision fp32 --peak-tflops 10)
set_tests_properties("cli: bad: a what-if on the host, which has no datasheet" PROPERTIES FIXTURES_REQUIRED cpu_profile)
cli_test("predict with a profile lists what it extrapolated" RC 0 MATCH "EXTRAPOLATED: no all-reduce table for 64 ranks"
  ARGS predict --model gpt3-1.3b --gpu h100-sxm-80gb --gpus 64 --profile ${profiles}/synthetic-gpu.json --allow-extrapolation
       --attention unfused)
cli_test("bad profile: an op outside the measured range is refused" RC 2 MATCH "GEMM bf16 2048x6144x2048 is outside the measured grid" "--allow-extrapolation"
  ARGS predict --model gpt3-1.3b --gpu h100-sxm-80gb --gpus 64 --profile ${profiles}/synthetic-gpu.json --attention unfused)
cli_test("bad profile: wrong schema_version" RC 2 MATCH "/schema_version: version 2 is not supported"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/wrong_schema_version.json)
cli_test("bad profile: NaN" RC 2 MATCH "nan_median.json: malformed JSON"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/nan_median.json)
cli_test("bad profile: a null timing" RC 2 MATCH "/gemm/0/points/3/timing/median_s: must be a positive, finite number"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/null_median.json)
cli_test("bad profile: a negative timing" RC 2 MATCH "/memory_bound/0/points/1/timing/median_s: must be a positive"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/negative_median.json)
cli_test("bad profile: a hole in the GEMM grid" RC 2 MATCH "the grid has no point for m=1024, n=1024, k=4096"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/grid_hole.json)
cli_test("bad profile: sizes out of order" RC 2 MATCH "/collectives/0/points: sizes must be strictly increasing"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/bytes_not_increasing.json)
cli_test("bad profile: an unknown key" RC 2 MATCH "/provenance/devise: unknown key \"devise\" \\(did you mean \"device\"\\?\\)"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/unknown_key.json)
cli_test("bad profile: a missing table" RC 2 MATCH "no memory_bound table for kernel \"copy\""
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/no_copy_table.json)
cli_test("bad profile: no provenance" RC 2 MATCH "/provenance: missing"
  ARGS predict --model gpt2-124m --gpu h100-sxm-80gb --gpus 1 --profile ${bad_profiles}/missing_provenance.json)
cli_test("bad: --gpu cpu without a CPU profile" RC 2 MATCH "--gpu cpu needs --profile of a CPU"
  ARGS predict --model gpt-tiny --gpu cpu --gpus 1)

# compare: a prediction (predict --format json, context scrubbed) against hand-made measurements of
# the same gpt-tiny dp2 x tp2 x pp2 plan (tests/data/compare/README.md says how they were made).
set(cmp ${CMAKE_CURRENT_SOURCE_DIR}/data/compare)
cli_test("compare within 5 percent exits 0 with every phase" RC 0
  MATCH "iteration time .* -3\\.1%" "compute" "TP communication" "DP communication" "PP communication" "pipeline bubble"
        "optimizer step" "memory peak per GPU" "within the tolerance of 15\\.0%"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/measured_close.json)
cli_test("compare 40 percent off exits 3 and says why" RC 3
  MATCH "iteration time .* -40\\.0%" "compare: iteration time error -40\\.0% .* is over the tolerance of 15\\.0%"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/measured_slow.json)
cli_test("compare with a wider tolerance accepts 40 percent" RC 0 MATCH "within the tolerance of 50\\.0%"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/measured_slow.json --tolerance 0.5)
cli_test("compare --format json has the documented keys" RC 0
  MATCH "\"schema\": \"trainsim.comparison\"" "\"iteration_time_error\": -0\\.03" "\"within_tolerance\": true"
        "\"figures\"" "\"compute_s\"" "\"bubble_s\"" "\"memory_peak_gib\"" "\"input_differences\": \\[\\]"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/measured_close.json --format json)
cli_test("compare lines up predicted and measured op categories per pipeline stage" RC 0
  MATCH "per op category, pipeline stage 0" "per op category, pipeline stage 1" "gemm_qkv .* -10\\.0%"
        "other .* -100\\.0%" "tp_comm: TP collectives"
  ARGS compare --predicted ${cmp}/prediction_ops.json --measured ${cmp}/measured_ops.json)
cli_test("bad compare: an unknown op category names the key and the nearest one" RC 2
  MATCH "bad_op_category.json: /op_categories/0/forward_s/gemm_qvk: unknown key" "did you mean \"gemm_qkv\""
  ARGS compare --predicted ${cmp}/prediction_ops.json --measured ${cmp}/bad_op_category.json)
cli_test("predict --format json prices the op categories of every pipeline stage" RC 0
  MATCH "\"op_categories\": " "\"stage\": 1" "\"gemm_lm_head\"" "\"tp_comm\""
  ARGS predict --model gpt-tiny --gpu a100-sxm-80gb --gpus 8 --dp 2 --tp 2 --pp 2 --micro-batch 1 --global-batch 8 --format json)
cli_test("bad compare: a plan mismatch lists the differing keys" RC 2
  MATCH "describe different runs: 2 key" "measured_other_plan.json: /inputs/plan/dp: 4, but the prediction has 2"
        "/inputs/plan/tp: 1, but the prediction has 2" "--allow-mismatch"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/measured_other_plan.json)
cli_test("compare --allow-mismatch compares anyway and shows the mismatch" RC 0
  MATCH "MISMATCH \\(--allow-mismatch\\): /inputs/plan/tp: predicted 2, measured 1"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/measured_other_plan.json --allow-mismatch)
cli_test("bad compare: a measurement of the wrong schema" RC 2
  MATCH "bad_schema.json: /schema: expected \"trainsim.measurement\", got \"trainsim.measurment\""
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/bad_schema.json)
cli_test("bad compare: a prediction given as the measurement" RC 2
  MATCH "prediction.json: /schema: expected \"trainsim.measurement\", got \"trainsim.prediction\""
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/prediction.json)
cli_test("bad compare: a measurement given as the prediction" RC 2
  MATCH "measured_close.json: /schema: expected \"trainsim.prediction\", got \"trainsim.measurement\""
  ARGS compare --predicted ${cmp}/measured_close.json --measured ${cmp}/measured_close.json)
cli_test("bad compare: a missing breakdown key" RC 2
  MATCH "missing_bubble.json: /breakdown/bubble_s: missing required key \"bubble_s\""
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/missing_bubble.json)
cli_test("bad compare: a number written as a string" RC 2
  MATCH "string_iteration_time.json: /iteration_time_s: expected a number, got a string"
  ARGS compare --predicted ${cmp}/prediction.json --measured ${cmp}/string_iteration_time.json)
cli_test("bad compare: a missing file" RC 2 MATCH "nope.json: cannot open"
  ARGS compare --predicted ${cmp}/nope.json --measured ${cmp}/measured_close.json)

# The runtime: a one-rank run, and bad input (a clear message on rank 0 and exit 2).
cli_test("run trains gpt-tiny on one rank and writes a measurement" RC 0 MATCH "loss [0-9.]+ -> [0-9.]+" "measurement written"
  ARGS run --model gpt-tiny --micro-batch 2 --global-batch 4 --precision fp32 --attention unfused --steps 3
       --out ${CMAKE_CURRENT_BINARY_DIR}/run-one-rank.json)
cli_test("bad: run with a rank count that does not match the plan" RC 2 MATCH "needs dp x tp x pp x cp = 2 ranks, but mpirun started 1" "mpirun -np 2"
  ARGS run --model gpt-tiny --dp 2 --global-batch 4 --precision fp32 --steps 1 --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: run with a missing data file" RC 2 MATCH "--data: cannot open /nonexistent/corpus.txt"
  ARGS run --model gpt-tiny --precision fp32 --steps 1 --data /nonexistent/corpus.txt --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: run a plan the CPU runtime cannot take" RC 2 MATCH "precision bf16 .the CPU runtime trains in fp32"
  ARGS run --model gpt-tiny --precision bf16 --steps 1 --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: run with an MoE routing imbalance (the runtime measures its own router's load)" RC 2
  MATCH "moe_imbalance / moe_capacity_factor: the runtime routes with its own router"
  ARGS run --model ${CMAKE_CURRENT_SOURCE_DIR}/data/models/moe-tiny.json --gpus 2 --ep 2 --precision fp32 --steps 1 --moe-imbalance 1.5
       --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: run with TP comm overlap" RC 2 MATCH "tp_comm_overlap: the runtime runs its TP collectives"
  ARGS run --model gpt-tiny --gpus 2 --tp 2 --sequence-parallel --tp-comm-overlap --precision fp32 --steps 1
       --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: run a model that cannot fit in host memory" RC 2 MATCH "need at least [0-9.]+ GiB .* per rank" "hint: train a smaller model"
  ARGS run --model llama3-405b --seq-len 1024 --precision fp32 --steps 1 --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: resume from a corrupt checkpoint" RC 2 MATCH "rank0.it0.ckpt: corrupt checkpoint: checksum mismatch"
  ARGS run --model gpt-tiny --precision fp32 --steps 3 --resume --checkpoint-dir ${CMAKE_CURRENT_SOURCE_DIR}/data/bad_checkpoint
       --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)
cli_test("bad: resume without a checkpoint" RC 2 MATCH "latest is missing or unreadable"
  ARGS run --model gpt-tiny --precision fp32 --steps 3 --resume --checkpoint-dir ${CMAKE_CURRENT_BINARY_DIR}/no-such-dir
       --out ${CMAKE_CURRENT_BINARY_DIR}/x.json)

# --framework: a preset's defaults for what the flags leave out, said on stderr; stated flags win.
cli_test("predict --framework nemo: distributed optimizer and SP with TP, said so" RC 0
  MATCH "framework nemo: zero_stage 1, sequence_parallel on" "ZeRO-1, recompute none, SP"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --global-batch 64 --framework nemo)
cli_test("predict --framework deepspeed --zero 3 overlaps the gradient reduce-scatter (overlap_comm's stage-3 default)" RC 0
  MATCH "framework deepspeed: sequence_parallel off, dp_overlap on .overlap_comm's default at stage 3." ARGS
  predict --model llama3-8b --gpu h100-sxm-80gb --gpus 64 --framework deepspeed --zero 3 --global-batch 256)
cli_test("predict --framework megatron-deepspeed: unfused attention, gradient all-reduce after the backward" RC 0
  MATCH "framework megatron-deepspeed: zero_stage 0, sequence_parallel off, attention unfused, dp_overlap off"
  ARGS predict --model gpt2-355m --gpu a100-sxm-80gb --gpus 8 --tp 2 --global-batch 64 --framework megatron-deepspeed)
cli_test("predict --framework torchtitan: its selective checkpointing is per op, its loss PyTorch's" RC 0
  MATCH "recompute selective -> selective_op" "recompute selective_op"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --recompute selective --global-batch 16 --framework torchtitan)
cli_test("bad: export has no Megatron-LM flag for per-op checkpointing" RC 2
  MATCH "Megatron-LM has no per-op selective checkpointing" ARGS export ${plans}/llama3-8b-fsdp-selective-op.json --to megatron)
cli_test("a plan file with per-op checkpointing and PyTorch's loss predicts, and says so" RC 0
  MATCH "recompute selective_op" ARGS predict --model llama3-8b --gpu h100-sxm-96gb-500w --plan ${plans}/llama3-8b-fsdp-selective-op.json)
cli_test("bad: the runtime runs fused norms and loss only" RC 2
  MATCH "norm eager / cross_entropy pytorch or compiled describe another framework's kernels"
  ARGS run --model gpt-tiny --dp 1 --global-batch 2 --steps 1 --precision fp32 --norm eager
       --out ${CMAKE_CURRENT_BINARY_DIR}/eager_norm_run)
cli_test("bad: the runtime does not run per-op checkpointing" RC 2
  MATCH "recompute selective_op .per-op checkpointing. is not implemented by the runtime"
  ARGS run --model gpt-tiny --plan ${plans}/llama3-8b-fsdp-selective-op.json --dp 1 --global-batch 2 --steps 1
       --precision fp32 --out ${CMAKE_CURRENT_BINARY_DIR}/selective_op_run)
cli_test("predict --cross-entropy pytorch is written in the plan JSON" RC 0
  MATCH "cross_entropy.: .pytorch" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --cross-entropy pytorch --format json)
cli_test("predict --framework torchtitan --norm fused: a compiled run's RMSNorm and loss" RC 0
  MATCH "cross_entropy compiled \\(a compiled run compiles the loss\\), recompute" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --recompute selective
  --global-batch 16 --framework torchtitan --norm fused)
cli_test("predict --framework megatron-bridge: gradients in bf16 and FP8 primary weights, as its recipes" RC 0
  MATCH "grad_reduce_in_fp32 off .gradients reduced in bf16." "fp8_params on .the FP8 recipes' primary weights."
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --global-batch 64 --precision fp8 --framework megatron-bridge)
cli_test("predict: a small-expert MoE under Transformer Engine shows the device waiting for the host" RC 0
  MATCH "of it, waiting for the host"
  ARGS predict --model qwen3-30b-a3b --gpu h100-sxm-80gb --gpus 8 --ep 8 --global-batch 64 --precision fp8)
cli_test("predict --cuda-graphs: the scopes in the plan JSON and the host part" RC 0
  MATCH "\"cuda_graphs\": \"attn,moe_router\"" "\"stack\": \"transformer_engine\"" "\"idle_s\": "
  ARGS predict --model qwen3-30b-a3b --gpu h100-sxm-80gb --gpus 8 --ep 8 --global-batch 64 --cuda-graphs attn,moe_router --format json)
cli_test("search --cuda-graphs: every candidate's layers captured, none waits for the host" RC 0
  MATCH "of it, waiting for the host +0.00[0-9] +0.0%"
  ARGS search --model qwen3-30b-a3b --gpu h100-sxm-80gb --gpus 16 --global-batch 512 --top 1 --precision fp8 --cuda-graphs layer)
cli_test("search --cuda-graphs bogus: not a scope" RC 2
  MATCH "--cuda-graphs: bogus is not a CUDA graph scope"
  ARGS search --model qwen3-30b-a3b --gpu h100-sxm-80gb --gpus 16 --cuda-graphs bogus)
cli_test("predict --framework torchtitan: PyTorch's modules issue the ops" RC 0
  MATCH "host_stack pytorch"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 16 --framework torchtitan)
cli_test("predict --grad-reduce-in-bf16: the plan's gradients in bf16" RC 0
  MATCH "\"grad_reduce_in_fp32\": *false"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --global-batch 64 --grad-reduce-in-bf16 --format json)
cli_test("predict --framework gpt-neox: its softmax and bias-GELU unfused, as neox_args.py defaults them" RC 0
  MATCH "softmax_fusion off, bias_gelu_fusion off"
  ARGS predict --model gpt2-355m --gpu a100-sxm-80gb --gpus 8 --tp 2 --global-batch 64 --framework gpt-neox)
cli_test("predict --framework nemo keeps a plan file's fp8_params false (its FP8 primary-weight default applies only when unstated)" RC 0
  MATCH "framework nemo: zero_stage 1, sequence_parallel on, tp_comm_overlap on \\(" "TP comm overlap, fp8, flash"
  ARGS predict --model llama3-8b --plan ${plans}/fp8-params-off.json --gpu h100-sxm-80gb --framework nemo)
cli_test("predict --framework keeps what the flags state" RC 0
  MATCH "framework nemo: sequence_parallel on, tp_comm_overlap on \\(" "ZeRO-0"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --zero 0 --global-batch 64 --framework nemo)
cli_test("predict --framework torchtitan: FSDP and the local batch as one micro-batch" RC 0
  MATCH "framework torchtitan: zero_stage 3, sequence_parallel off, cross_entropy pytorch, norm eager" "micro_batch 2" "ZeRO-3"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 16 --framework torchtitan)
cli_test("bad: predict --framework with an unknown name lists the presets" RC 2
  MATCH "--framework" "megatron-core" "torchtitan" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --framework titan)
cli_test("predict shows memory as the device reports it beside the tensors' peak" RC 0
  MATCH "memory as the device reports  *[0-9.]+ of 79.6 GiB \\(stage 0: \\+[0-9.]+ allocator reserve, \\+[0-9.]+ CUDA/NCCL\\)"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --global-batch 64)
cli_test("predict --format json has memory_device_gib and its pieces" RC 0
  MATCH "\"memory_device_gib\"" "\"memory_reserved_gib\"" "\"memory_device_stage\": 0" "\"cuda_context_gib\"" "\"nccl_buffers_gib\"" "\"allocator_reserve_gib\": 0.9"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --global-batch 64 --recompute full --format json)
cli_test("search --framework torchtitan prices Hopper attention with FlashAttention-2" RC 0
  MATCH "Best plans" ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 64 --global-batch 256 --top 1 --framework torchtitan)
cli_test("search --framework torchtitan --compiled: fused RMSNorm" RC 0
  MATCH "Best plans" ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 16 --top 1 --framework torchtitan --compiled)
cli_test("bad: validate --cross-validate with a single group" RC 2
  MATCH "--cross-validate: 1 group.s. with predicted runs; leaving one out needs at least 2"
  ARGS validate --runs ${runs} --groups bloom --cross-validate)
set(vtrain ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/vtrain-single-node.json)
cli_test("validate reads several runs files and fits only the constants named" RC 0
  MATCH "fitting on 724 runs of 2 groups" "vtrain_single_node" "korthikanti_2022_table5" "\"host_dispatch_s\":7"
  ARGS validate --runs ${runs} ${vtrain} --groups korthikanti_2022_table5,vtrain_single_node --fit --fit-constants host_dispatch_s
       --summary --tolerance 0.2)
cli_test("bad: validate --runs gives one group in two files" RC 2
  MATCH "group \"megatron_sc21_table1\" is in both" ARGS validate --runs ${runs} ${runs})
cli_test("bad: validate --fit-constants names a constant the fit does not have" RC 2
  MATCH "--fit-constants" "gemm_peak_fraction" ARGS validate --runs ${runs} --fit --fit-constants gemm_fraction)
cli_test("bad: validate --fit-constants without a fit" RC 2
  MATCH "--fit-constants names the constants a fit moves; nothing is fitted without --fit" ARGS validate --runs ${runs} --fit-constants host_dispatch_s)
cli_test("bad: search --compiled without --framework" RC 2
  MATCH "--compiled says which RMSNorm a framework runs; it needs --framework"
  ARGS search --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 16 --compiled)
cli_test("bad: validate --fit on groups with nothing to fit" RC 2
  MATCH "--fit: no run of the chosen groups can be fitted on"
  ARGS validate --runs ${CMAKE_CURRENT_SOURCE_DIR}/data/validation/unsupported-only.json --fit)
cli_test("predict places explicit first-stage layers and says so" RC 0
  MATCH "layers per pipeline stage: 6, 8 x 15" ARGS predict --model llama3-405b --gpu h100-sxm-80gb --gpus 1024 --tp 8 --pp 16
  --first-stage-layers 6 --global-batch 512)
cli_test("bad: first/last-stage layers that leave the middle stages uneven" RC 2
  MATCH "must split evenly" ARGS predict --model llama3-405b --gpu h100-sxm-80gb --gpus 1024 --tp 8 --pp 16
  --first-stage-layers 6 --last-stage-layers 4 --global-batch 512)
cli_test("predict with a Zero Bubble schedule" RC 0 MATCH "zb-2p" "pipeline bubble"
  ARGS predict --model gpt3-1.3b --gpu a100-sxm-80gb --gpus 8 --pp 8 --global-batch 64 --schedule zb-2p)
cli_test("bad: export refuses a Zero Bubble schedule Megatron-LM does not have" RC 2
  MATCH "no Zero Bubble schedule" ARGS export ${plans}/gpt3-1.3b-pp8-zb1p.json --to megatron)

# --from: plans imported from launch files (flags on top override them); what is not modeled is listed.
set(imports ${CMAKE_CURRENT_SOURCE_DIR}/data/import)
cli_test("predict --from megatron reads a launch script, its world size and lists the flags not modeled" RC 0
  MATCH "dp 4 x tp 2 x pp 2, micro-batch 1 " "global batch 128 sequences" "ZeRO-1, recompute selective, SP, TP comm overlap, bf16"
        "megatron_llama3_8b.sh \\(megatron\\): known, not modeled \\(the prediction may be off\\): --overlap-param-gather \\(the ZeRO-1 parameter all-gather overlapped with the forward\\)$"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/megatron_llama3_8b.sh)
cli_test("predict --from megatron: --recompute-activations is selective; unknown, not-modeled and no-effect flags each on their line" RC 0
  MATCH "recompute selective, bf16"
        "megatron_flag_kinds.sh \\(megatron\\): unknown, not read: --sequence-paralel \\(did you mean --sequence-parallel\\?\\)$"
        "megatron_flag_kinds.sh \\(megatron\\): known, not modeled \\(the prediction may be off\\): --manual-gc \\(Python garbage collection at fixed steps\\)$"
        "megatron_flag_kinds.sh \\(megatron\\): known, no effect on speed or memory: --lr$"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/megatron_flag_kinds.sh)
cli_test("predict --from deepspeed: activation_checkpointing does not turn recomputation on, and the note says what to pass" RC 0
  MATCH "ZeRO-1 \\(DeepSpeed.s gradient buckets: 0.93 GiB\\), recompute none, bf16" "configures DeepSpeed's checkpointing but does not turn it on" "add --recompute full"
        "known, not modeled \\(the prediction may be off\\): activation_checkpointing.synchronize_checkpoint_boundary$"
  ARGS predict --model gpt3-1.3b --gpu a100-sxm-80gb --from deepspeed ${imports}/ds_activation_checkpointing.json)
cli_test("bad: --from deepspeed with CPU and NVMe offload is refused with the key, the device and why" RC 2
  MATCH "ds_cpu_offload.json: /zero_optimization/offload_optimizer/device: \"cpu\": the optimizer states and their step offloaded to host memory"
        "/zero_optimization/offload_param/device: \"nvme\"" "hint: set the device to \"none\""
  ARGS predict --model gpt3-1.3b --gpu a100-sxm-80gb --from deepspeed ${imports}/ds_cpu_offload.json)
cli_test("export --to megatron of Llama 3 is launchable: its RoPE base, the attention backend priced, what to add" RC 0
  MATCH "^# trainsim: add what these arguments leave out" "--position-embedding-type rope --rotary-base 500000"
        "--transformer-impl transformer_engine --attention-backend fused" "--make-vocab-size-divisible-by 32 "
  ARGS export ${plans}/llama3-70b-tp8-pp4.json --model llama3-70b --to megatron)
cli_test("predict --from megatron: flags given on the command line override the script" RC 0
  MATCH "dp 2 x tp 4 x pp 2" ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/megatron_llama3_8b.sh --tp 4)
cli_test("predict --from deepspeed derives dp from the batch arithmetic" RC 0
  MATCH "16 x a100-sxm-80gb" "dp 16 x tp 1 x pp 1, micro-batch 4 " "global batch 256 sequences"
        "ZeRO-2 \\(DeepSpeed's gradient buckets: 1.86 GiB\\)"
        "known, no effect on speed or memory: gradient_clipping, optimizer, steps_per_print"
  ARGS predict --model gpt3-1.3b --gpu a100-sxm-80gb --from deepspeed ${imports}/ds_config.json)
cli_test("predict --from torchtitan: FSDP, per-op checkpointing and torchtitan's attention kernel" RC 0
  MATCH "dp 8 x tp 8 x pp 1, micro-batch 2 " "global batch 16 sequences" "ZeRO-3, recompute selective_op, SP, TP comm overlap" "FlashAttention-2"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 64 --from torchtitan ${imports}/torchtitan_llama3_8b.toml)
cli_test("search --framework nemo also tries every SP plan with TP communication overlap" RC 0
  MATCH "sp\\+tpo"
  ARGS search --model llama3-70b --gpu h100-sxm-80gb --gpus 64 --global-batch 128 --framework nemo --top 5)
cli_test("bad: predict --tp-comm-overlap without sequence parallelism" RC 2
  MATCH "tp_comm_overlap: TP communication overlap needs tp > 1 and sequence_parallel"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 2 --tp-comm-overlap)
cli_test("search --from sets the imported plan beside the best" RC 0
  MATCH "Best plans" "Imported plan \\(.*megatron_llama3_8b.sh\\): dp 4 x tp 2 x pp 2 x cp 1.*tokens/s per GPU"
  ARGS search --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/megatron_llama3_8b.sh --top 1)
cli_test("export --to torchtitan writes a job TOML" RC 0
  MATCH "flavor = \"8B\"" "data_parallel_shard_degree = 8" "selective_ac_option = \"op\"" "local_batch_size = 2"
  ARGS export ${plans}/llama3-8b-fsdp-selective-op.json --model llama3-8b --to torchtitan)
cli_test("bad: export --to torchtitan of a plan torchtitan cannot run names every setting" RC 2
  MATCH "zero_stage 1: torchtitan has no ZeRO-1" "recompute selective \\(Megatron's attention core\\)"
  ARGS export ${plans}/llama3-70b-tp8-pp4.json --model llama3-70b --to torchtitan)
cli_test("bad: --from torchtitan with malformed TOML names the file and the parse error" RC 2
  MATCH "torchtitan_malformed.toml: malformed TOML at line 3, column [0-9]+:" "hint: check the file with a TOML validator"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --from torchtitan ${imports}/torchtitan_malformed.toml)
cli_test("bad: --from megatron with a malformed value names the file, the flag and the value" RC 2
  MATCH "megatron_bad_value.sh: --tensor-model-parallel-size: \"x\" is not an integer"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/megatron_bad_value.sh)
cli_test("bad: --from megatron without a world size asks for --gpus" RC 2
  MATCH "the GPU count is not in the file" "hint: give --gpus N"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/megatron_args_only.txt)
cli_test("bad: --from megatron of a file without one Megatron flag (a DeepSpeed config)" RC 2
  MATCH "ds_config.json: no Megatron-LM argument in the file"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from megatron ${imports}/ds_config.json)
cli_test("bad: --from an unknown format lists the formats" RC 2 MATCH "\"titan\" is not one of: megatron, deepspeed, torchtitan"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --from titan ${imports}/torchtitan_llama3_8b.toml)

# Goodput (docs/goodput.md): checkpoints, failures, effective days and $.
set(goodput_plan --model llama3-70b --gpu h100-sxm-80gb --gpus 1024 --tp 8 --pp 4 --micro-batch 1 --global-batch 1024 --zero 1)
cli_test("predict --train-tokens prints goodput, effective days and $" RC 0
  MATCH "Goodput: sync checkpoints" "optimum: Daly / Young" "ideal / effective" "Goodput as the cluster grows"
  ARGS predict ${goodput_plan} --train-tokens 15e12)
cli_test("predict --format json has the goodput block" RC 0
  MATCH "\"goodput\": \\{" "\"checkpoint_interval_optimal_s\"" "\"train_days_effective\"" "\"by_interval\"" "\"by_cluster_size\"" "\"save_s\""
  ARGS predict ${goodput_plan} --train-tokens 15e12 --checkpoint async --checkpoint-interval-min 30 --format json)
cli_test("predict without --train-tokens or goodput options prints no goodput" RC 0 MATCH "iteration time"
  ARGS predict ${goodput_plan})
cli_test("search --objective effective-time ranks by effective days" RC 0
  MATCH "objective effective-time" "goodput: sync checkpoints" "eff. days"
  ARGS search --model gpt3-6.7b --gpu a100-sxm-80gb --gpus 16 --global-batch 64 --train-tokens 3e11 --objective effective-time --top 3)
cli_test("search --format json gives each plan its goodput" RC 0
  MATCH "\"objective\": \"effective-cost\"" "\"goodput\": \\{" "\"train_usd_effective\""
  ARGS search --model gpt3-6.7b --gpu a100-sxm-80gb --gpus 16 --global-batch 64 --train-tokens 3e11 --objective effective-cost --top 2 --format json)
cli_test("report draws goodput against checkpoint interval and cluster size" RC 0
  MATCH "\"charts\": 6"
  ARGS report ${CMAKE_CURRENT_SOURCE_DIR}/data/goodput/prediction.json --out ${CMAKE_CURRENT_BINARY_DIR}/goodput-report.md --format json)
cli_test("bad: --checkpoint other than sync or async" RC 2 MATCH "--checkpoint" "sync"
  ARGS predict ${goodput_plan} --checkpoint sometimes)
cli_test("bad: goodput rates that are not finite, on a plan that does not fit" RC 2
  MATCH "--storage-write-gb-per-s: inf must be > 0 and at most" "--gpu-mtbf-hours: nan must be > 0"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --train-tokens 1e12 --storage-write-gb-per-s inf --gpu-mtbf-hours nan)
cli_test("bad: a zero MTBF per GPU" RC 2 MATCH "--gpu-mtbf-hours: 0 must be > 0" "hint: leave an option out"
  ARGS predict ${goodput_plan} --gpu-mtbf-hours 0)
cli_test("bad: calibrate --checkpoint-dir of a folder that does not exist" RC 2
  MATCH "--checkpoint-dir: /nonexistent/ckpt is not a folder" "hint: create it first"
  ARGS calibrate cpu --out ${CMAKE_CURRENT_BINARY_DIR}/never.json --checkpoint-dir /nonexistent/ckpt)
cli_test("bad: calibrate --out into a folder that does not exist is refused before the sweep" RC 2
  MATCH "--out: the folder /nonexistent/dir of /nonexistent/dir/p.json does not exist" "hint: create it first"
  ARGS calibrate cpu --quick --out /nonexistent/dir/p.json)

# Start-up without CUDA (docs/cuda-runtime.md, "The CUDA module"): trainsim needs no CUDA library;
# run --backend cuda and calibrate gpu say plainly what is missing (exit 2).
add_test(NAME "cli: trainsim needs no CUDA library, and catalog runs with none reachable"
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/no_cuda_startup.sh $<TARGET_FILE:trainsim>)
if(TARGET trainsim_cuda)
  set(no_module "the CUDA module libtrainsim_cuda.so is missing .no [^ ]*/bin/libtrainsim_cuda.so or")
  cli_test("bad: run --backend cuda with a module that is not one names the file and the CUDA libraries" RC 2
    MATCH "--backend cuda: cannot load the CUDA module ${PROJECT_SOURCE_DIR}/README.md" "hint: it needs the CUDA 13 runtime and cuBLAS .libcudart.so.13"
    ARGS run --backend cuda --model gpt-tiny --precision bf16 --steps 1 --out ${CMAKE_CURRENT_BINARY_DIR}/never.json)
  set_tests_properties("cli: bad: run --backend cuda with a module that is not one names the file and the CUDA libraries"
    PROPERTIES ENVIRONMENT "TRAINSIM_CUDA_MODULE=${PROJECT_SOURCE_DIR}/README.md")
else()
  set(no_module "this trainsim was built without CUDA")
endif()
add_test(NAME "cli: without its CUDA module trainsim refuses run --backend cuda and calibrate gpu (exit 2) and runs the rest"
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/cuda_module_missing.sh $<TARGET_FILE:trainsim> "${no_module}")

# Partial full recomputation (Megatron-Core's --recompute-method / --recompute-num-layers).
cli_test("predict names a block recomputation in its plan line" RC 0
  MATCH "recompute full .block 2." ARGS predict --model gpt3-6.7b --gpu a100-sxm-80gb --gpus 16 --tp 2 --pp 4 --vpp 2
       --global-batch 64 --recompute full --recompute-method block --recompute-num-layers 2)
cli_test("predict --format json writes recompute_method and recompute_layers" RC 0
  MATCH "\"recompute_method\": \"uniform\"" "\"recompute_layers\": 2" ARGS predict --model gpt3-6.7b --gpu a100-sxm-80gb
       --gpus 8 --recompute full --recompute-num-layers 2 --format json)
cli_test("export a block-recompute plan file to Megatron-LM" RC 0
  MATCH "--recompute-granularity full --recompute-method block --recompute-num-layers 2"
  ARGS export ${plans}/llama3-70b-tp8-pp4-block2.json --model llama3-70b --to megatron)
cli_test("search --recompute-method block also ranks block plans" RC 0 MATCH "full .block 2."
  ARGS search --model gpt3-6.7b --gpu a100-sxm-80gb --gpus 16 --global-batch 64 --top 2000 --recompute-method block --recompute-num-layers 2)
cli_test("bad: the runtime does not run partial recomputation" RC 2
  MATCH "recompute full with recompute_method block and recompute_layers 1 .partial recomputation. is not implemented by the runtime"
  ARGS run --model gpt-tiny --dp 1 --global-batch 2 --steps 1 --precision fp32 --recompute full --recompute-method block
       --out ${CMAKE_CURRENT_BINARY_DIR}/block_recompute_run)
include(${CMAKE_CURRENT_LIST_DIR}/plan_defaults_tests.cmake)

# DeepSpeed's ZeRO-3 collectives: a gather per module bucket, forward and backward (plan/zero3_collectives.hpp).
cli_test("predict --framework deepspeed --zero 3 says it issues DeepSpeed's collectives" RC 0
  MATCH "zero3_collectives deepspeed" "\"zero3_collectives\": \"deepspeed\""
  ARGS predict --model gpt3-13b --gpu a100-sxm-80gb --gpus 1024 --zero 3 --framework deepspeed --global-batch 2048 --format json)
cli_test("bad: --zero3-collectives takes per_layer or deepspeed" RC 2 MATCH "zero3-collectives"
  ARGS predict --model gpt3-13b --gpus 64 --zero 3 --zero3-collectives modules)
cli_test("predict takes ZeRO-2 with a pipeline: Llama 3's FSDP without resharding after forward" RC 0
  MATCH "ZeRO-2 \\(FSDP not resharded after forward, as ZeRO-3 with a pipeline\\)" "iteration time"
  ARGS predict --model llama3-405b --gpu h100-sxm-80gb --gpus 1024 --tp 8 --pp 16 --zero 2 --framework torchtitan --global-batch 512)
cli_test("search over FP8, MXFP8 and NVFP4 on H100 and GB200 skips the block-scaled formats on the H100 and says so" RC 0
  MATCH "gb200-nvl72 x 64, nvfp4" "h100-sxm-80gb: mxfp8 not searched \\(no tensor-core peak for it\\)"
        "h100-sxm-80gb: nvfp4 not searched"
  ARGS search --model llama3-8b --gpu h100-sxm-80gb,gb200-nvl72 --gpus 64 --global-batch 256 --precision fp8,mxfp8,nvfp4 --top 2)
cli_test("bad: a hybrid Mamba-2 model (Nemotron-H) is refused by name with the reason" RC 2
  MATCH "\"nemotron_h\" is Nemotron-H / Nemotron 3 \\(Mamba-2 layers" "not modeled"
  ARGS model --model ${hf}/nemotron-h/config.json)
cli_test("validate --summary counts the runs that trained but are judged not to fit" RC 0
  MATCH "ran, judged OOM" "korthikanti_2022_table5 +8 +0 "
  ARGS validate --summary --runs ${runs} --groups korthikanti_2022_table5)
# Megatron-Core's per-expert bias loop (GPT-OSS's biased experts) and the op fuser that removes it.
cli_test("predict gpt-oss-120b: the experts' bias loop is priced under residual and bias adds" RC 0
  MATCH "\"residual_bias\": *[0-9.]+[1-9]"
  ARGS predict --model gpt-oss-120b --gpu h100-sxm-80gb --gpus 64 --pp 4 --ep 8 --global-batch 256 --format json)
cli_test("predict --te-op-fuser: the plan says so" RC 0
  MATCH "\"te_op_fuser\": *true"
  ARGS predict --model gpt-oss-120b --gpu h100-sxm-80gb --gpus 64 --pp 4 --ep 8 --global-batch 256 --te-op-fuser --format json)
cli_test("search --export megatron --te-op-fuser writes --use-transformer-engine-op-fuser" RC 0
  MATCH "--use-transformer-engine-op-fuser"
  ARGS search --model gpt-oss-120b --gpu h100-sxm-80gb --gpus 64 --global-batch 256 --top 1 --te-op-fuser --export megatron)
# LoRA fine-tuning: the plan line says so, the frozen base weights fit where full training does not.
cli_test("predict --lora-rank: the plan line names LoRA and the frozen base" RC 0
  MATCH "LoRA rank 16 \\(base weights frozen\\)" "memory peak per GPU +[0-9.]+ of 79.6 GiB"
  ARGS predict --model llama3-70b --gpu h100-sxm-80gb --gpus 8 --tp 8 --global-batch 8 --lora-rank 16)
cli_test("predict --lora-rank --format json: the plan carries lora_rank" RC 0
  MATCH "\"lora_rank\": *16"
  ARGS predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --global-batch 16 --lora-rank 16 --format json)
cli_test("search --lora-rank: LoRA on every candidate, no ZeRO-3" RC 0
  MATCH "Best plans"
  ARGS search --model llama3-70b --gpu h100-sxm-80gb --gpus 8 --global-batch 32 --lora-rank 16 --top 3)
cli_test("export --to megatron of a LoRA plan says where LoRA is set" RC 0
  MATCH "LoRA rank 8 was priced: these arguments train every weight"
  ARGS export ${plans}/llama3-8b-lora8.json --model llama3-8b --to megatron)
# CPU activation offloading: fewer layers' activations on the GPU, the copies over the host link.
cli_test("predict --cpu-offload-layers: Llama 3 70B on 64 GB200 with ZeRO-3 fits with 40 of 80 layers offloaded" RC 0
  MATCH "memory peak per GPU +1[0-9][0-9].[0-9] of 185.0 GiB"
  ARGS predict --model llama3-70b --cluster gb200-nvl72 --gpus 64 --micro-batch 2 --global-batch 256 --precision fp8 --zero 3 --cpu-offload-layers 40)
cli_test("model --lora-rank: the adapters are counted as what trains, the plan line says LoRA and offloading" RC 0
  MATCH "LoRA adapters \\(rank 16; what trains\\) +175,636,480" "LoRA rank 16 \\(base weights frozen\\), 8 layers' activations offloaded to the CPU"
  ARGS model --model llama3-70b --gpu h100-sxm-80gb --gpus 8 --tp 8 --global-batch 8 --lora-rank 16 --cpu-offload-layers 8)
