# GPU tests of the CUDA runtime (tests/runtime_gpu/*.sh): skipped (exit 77) without a GPU.
# Multi-rank layouts run on one GPU with a NCCL_HOSTID per rank (slow: NCCL's socket transport).
if(TARGET trainsim_cuda_runtime)
  # Loss parity with the CPU backend of `model` (a tests/data/models file, or gpt-tiny when empty) on
  # each layout: "RANKS;FLAGS...".
  function(cuda_parity_tests label model)
    foreach(layout ${ARGN})
      string(REPLACE " " ";" layout "${layout}")
      list(GET layout 0 ranks)
      set(args "")
      set(name "one GPU")
      if(ranks GREATER 1)
        list(SUBLIST layout 1 -1 args)
        string(REPLACE ";" " " name "${args}")
      endif()
      set(test_name "cuda runtime parity${label}: ${name} matches the CPU backend")
      add_test(NAME "${test_name}" COMMAND ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/parity.sh $<TARGET_FILE:trainsim> ${ranks} ${args})
      set_tests_properties("${test_name}" PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE TIMEOUT 900)
      if(model)
        set_tests_properties("${test_name}" PROPERTIES ENVIRONMENT "PARITY_MODEL=${model}")
      endif()
    endforeach()
  endfunction()
  cuda_parity_tests("" "" "1" "2 --dp 2" "2 --tp 2" "2 --tp 2 --sequence-parallel" "2 --pp 2" "2 --pp 2 --schedule gpipe"
                    "2 --dp 2 --no-dp-overlap" "2 --dp 2 --zero 1" "2 --dp 2 --zero 2" "2 --tp 2 --sequence-parallel --recompute full"
                    "4 --dp 2 --pp 2" "4 --tp 2 --pp 2 --sequence-parallel" "2 --tp 2 --attention unfused"
                    "2 --pp 2 --attention unfused --recompute selective" "2 --dp 2 --zero 3" "2 --dp 2 --zero 3 --recompute full"
                    "4 --dp 2 --tp 2 --sequence-parallel --zero 3")
  # The vocabulary split over TP (every tp > 1 layout above runs it): tp 4, where two ranks share the
  # ASCII corpus's tokens and targets (ids 0-63 and 64-127; at tp 2 rank 0 holds them all), and the
  # tied embedding's all-reduce between the PP ends without SP.
  cuda_parity_tests("" "" "4 --tp 4" "4 --tp 4 --sequence-parallel" "4 --tp 2 --pp 2")
  # The Llama-style path (RMSNorm, RoPE, GQA, SwiGLU, untied head, no biases).
  cuda_parity_tests(", llama-tiny" "${PROJECT_SOURCE_DIR}/tests/data/models/llama-tiny.json"
                    "1" "2 --tp 2" "2 --tp 2 --sequence-parallel" "2 --pp 2" "2 --dp 2 --zero 3")
  # MoE (moe-tiny: 4 SwiGLU experts, top 2, one shared expert; tp 1): every expert on every rank,
  # experts over DP ranks (ep 2; ep 2 of dp 4, whose expert gradients are summed over expert-DP pairs;
  # ep 4: one expert each), with PP, with full recomputation (the forward routes again), ZeRO-3 at ep 1.
  cuda_parity_tests(", moe-tiny" "${PROJECT_SOURCE_DIR}/tests/data/models/moe-tiny.json"
                    "1" "2 --dp 2" "2 --dp 2 --ep 2" "4 --dp 4 --ep 2" "4 --dp 4 --ep 4" "4 --dp 2 --pp 2 --ep 2"
                    "2 --dp 2 --ep 2 --recompute full" "2 --dp 2 --zero 3")
  # Context parallelism: the p2p ring attention over cp ranks (seq 128: chunks of 32 rows with cp 2,
  # 16 with cp 4), its gradients reduced over dp x cp; the CPU reference runs the same data on one rank.
  cuda_parity_tests("" "" "2 --cp 2" "4 --cp 2 --tp 2 --sequence-parallel" "4 --cp 2 --dp 2" "2 --cp 2 --zero 1"
                    "2 --cp 2 --recompute full" "4 --cp 2 --pp 2" "4 --cp 4")
  cuda_parity_tests(", llama-tiny" "${PROJECT_SOURCE_DIR}/tests/data/models/llama-tiny.json"
                    "2 --cp 2" "4 --cp 2 --tp 2 --sequence-parallel" "4 --cp 2 --dp 2 --zero 3")
  # The interleaved schedule (4 layers: PP2 x 2 chunks), round the ring between the last stage and the first.
  cuda_parity_tests(", gpt-4l" "${PROJECT_SOURCE_DIR}/bench/cpu_models/gpt-4l.json"
                    "2 --pp 2 --schedule interleaved --vpp 2" "4 --dp 2 --pp 2 --schedule interleaved --vpp 2")
  # Checkpoints: save, resume, same losses (one GPU; DP2 ZeRO-1 and ZeRO-3 on it).
  foreach(case "1 1" "2 1" "2 3")
    string(REPLACE " " ";" case "${case}")
    list(GET case 0 ranks)
    list(GET case 1 zero)
    set(test_name "cuda runtime: a resumed run (${ranks} rank(s), ZeRO-${zero}) continues the uninterrupted loss curve")
    add_test(NAME "${test_name}" COMMAND ${CMAKE_CURRENT_LIST_DIR}/resume.sh $<TARGET_FILE:trainsim> ${ranks} ${zero})
    set_tests_properties("${test_name}" PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE TIMEOUT 900)
  endforeach()
endif()
