#!/usr/bin/env bash
# The GPU steps of trainsim in as few device calls as possible: on the GPU machine, with the kit of
# scripts/device_kit.sh carried along, run the stages named (in this order):
#   check      nvidia-smi, the libraries the kit resolved, the kit's commit
#   tests      the GPU Catch2 tests: [cuda_kernels], [cuda_runtime], the quick GPU calibration
#   parity     CUDA-vs-CPU loss parity on one GPU, then DP2, TP2, PP2 (NCCL sockets, NCCL_HOSTID per rank),
#              a Llama-style toy on one GPU and TP2+SP, checkpoint resume on 1 and 2 ranks
#   calibrate  trainsim calibrate gpu (CALIBRATE_FLAGS, e.g. --quick or --gemm-dtypes bf16,fp8; at most
#              CALIBRATE_TIMEOUT_S, default 540) -> profile.json
#   kernels    bench/gpu_kernels.py through the machine's PyTorch: MoE grouped GEMMs, FP8 GEMMs per
#              scaling recipe, FlashAttention-2 / cuDNN attention (KERNEL_TABLES) -> kernels.jsonl
#   sinks      cuDNN attention with and without GPT-OSS's learnable sinks (bench/cudnn_sink_attention.cpp,
#              built there against cudnn-frontend's headers in FRONTEND_INCLUDE, default .fe/include,
#              carried) -> sinks.jsonl
#   sweep      every plan of bench/gpu_validation/runs.txt (RUNS="id ..." picks some) -> runs/ID.json
# Everything lands in OUT (the device tool's $OUT): session.log, profile.json, kernels.jsonl and results.tar.gz
# (re-packed after each step, so a call cut short still returns what it did). bench/gpu_report.sh
# turns the results into the measured-vs-predicted report here.
# Usage: source .device-kit/env.sh && bench/gpu_session.sh check tests parity calibrate sweep
# DEADLINE_S (default 540): stages and runs that would start later than this many seconds after the
# start are skipped (the device tool stops a command at 600 s).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/gpu-session-out}
deadline=${DEADLINE_S:-540}
start=$SECONDS
if [ -z "${TRAINSIM_KIT:-}" ]; then echo "source the kit's env.sh first (scripts/device_kit.sh)" >&2; exit 2; fi
# Only four files go to OUT (the device tool brings back at most 8); the work lies beside it.
work=${WORK:-/tmp/trainsim-gpu-session}
mkdir -p "$out" "$work/runs" "$work/logs"
log=$out/session.log
say() { echo "[$((SECONDS - start))s] $*" | tee -a "$log"; }
pack() { cp "$log" "$work/session.log"; tar -czf "$out/results.tar.gz" -C "$work" . 2>/dev/null; }
time_left() { [ $((SECONDS - start)) -lt "$deadline" ] || { say "deadline ${deadline}s reached: skipping $1"; return 1; }; }
step() {  # NAME TIMEOUT COMMAND...: runs with a timeout, log in work/logs/NAME.log, one line of result
  local name=$1 limit=$2 rc t0=$SECONDS
  shift 2
  time_left "$name" || return 0
  timeout "$limit" "$@" >"$work/logs/$name.log" 2>&1
  rc=$?
  say "$name: rc $rc in $((SECONDS - t0)) s$([ $rc = 124 ] && echo ' (timed out)')"
  [ $rc = 0 ] || tail -n 30 "$work/logs/$name.log" | sed 's/^/    /' | tee -a "$log"
  pack
  return 0
}

stage_check() {
  say "kit commit: $(tr '\n' ' ' <"$TRAINSIM_KIT/COMMIT")"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee -a "$log"
  ldd "$TRAINSIM_KIT/bin/trainsim" "$TRAINSIM_KIT/bin/libtrainsim_cuda.so" | grep -E "cuda|cublas|nccl|mpi" | tee -a "$log"
  trainsim --version 2>&1 | tee -a "$log"
  nvidia-smi -q >"$work/nvidia-smi.txt" 2>&1
}

stage_tests() {
  step kernel-tests 240 trainsim_tests "[cuda_kernels]" --durations yes
  step runtime-tests 120 trainsim_tests "[cuda_runtime]" --durations yes
  step calibration-test 240 trainsim_tests "a quick GPU calibration*" --durations yes
}

stage_parity() {
  local layout
  for layout in "1" "2 --dp 2" "2 --tp 2 --sequence-parallel" "2 --pp 2" "2 --dp 2 --zero 2" "2 --dp 2 --zero 3" \
                "2 --tp 2 --attention unfused"; do
    # shellcheck disable=SC2086
    step "parity-$(echo "$layout" | tr -d ' -')" 300 env TRAINSIM_DATA="$TRAINSIM_CORPUS" "$root/tests/runtime_gpu/parity.sh" \
      "$TRAINSIM_KIT/bin/trainsim" $layout
  done
  # The Llama-style path (RMSNorm, RoPE, GQA, SwiGLU, untied head, no biases).
  for layout in "1" "2 --tp 2 --sequence-parallel"; do
    # shellcheck disable=SC2086
    step "parity-llama-$(echo "$layout" | tr -d ' -')" 300 env TRAINSIM_DATA="$TRAINSIM_CORPUS" \
      PARITY_MODEL="$root/tests/data/models/llama-tiny.json" "$root/tests/runtime_gpu/parity.sh" "$TRAINSIM_KIT/bin/trainsim" $layout
  done
  # shellcheck disable=SC2086
  step parity-interleaved 300 env TRAINSIM_DATA="$TRAINSIM_CORPUS" PARITY_MODEL="$root/bench/cpu_models/gpt-4l.json" \
    "$root/tests/runtime_gpu/parity.sh" "$TRAINSIM_KIT/bin/trainsim" 2 --pp 2 --schedule interleaved --vpp 2
  step resume-1 300 env TRAINSIM_DATA="$TRAINSIM_CORPUS" "$root/tests/runtime_gpu/resume.sh" "$TRAINSIM_KIT/bin/trainsim" 1
  step resume-2 300 env TRAINSIM_DATA="$TRAINSIM_CORPUS" "$root/tests/runtime_gpu/resume.sh" "$TRAINSIM_KIT/bin/trainsim" 2
  step resume-zero3 300 env TRAINSIM_DATA="$TRAINSIM_CORPUS" "$root/tests/runtime_gpu/resume.sh" "$TRAINSIM_KIT/bin/trainsim" 2 3
}

stage_calibrate() {
  # shellcheck disable=SC2086
  step calibrate "${CALIBRATE_TIMEOUT_S:-540}" trainsim calibrate gpu ${CALIBRATE_FLAGS:-} --out "$work/profile.json"
  [ -f "$work/profile.json" ] && cp "$work/profile.json" "$out/profile.json"
}

stage_kernels() {
  # The machine's own PyTorch, with its own CUDA libraries: the kit's LD_LIBRARY_PATH stays out.
  step kernels 240 env LD_LIBRARY_PATH= PYTHONUNBUFFERED=1 python3 "$root/bench/gpu_kernels.py" --out "$work/kernels.jsonl" \
    ${KERNEL_TABLES:+--tables "$KERNEL_TABLES"}
  [ -f "$work/kernels.jsonl" ] && cp "$work/kernels.jsonl" "$out/kernels.jsonl"
}

stage_sinks() {
  # cuDNN from the machine's Python package (the kit's LD_LIBRARY_PATH stays out), as Transformer
  # Engine would load it.
  step sinks-build 180 env LD_LIBRARY_PATH= "$root/bench/cudnn_sink_attention.sh" "${FRONTEND_INCLUDE:-$root/.fe/include}" \
    "$work/cudnn_sink_attention"
  [ -x "$work/cudnn_sink_attention" ] && step sinks 120 env LD_LIBRARY_PATH= sh -c "'$work/cudnn_sink_attention' > '$work/sinks.jsonl'"
  [ -f "$work/sinks.jsonl" ] && cp "$work/sinks.jsonl" "$out/sinks.jsonl"
}

stage_sweep() {
  local id model flags
  while read -r id model flags; do
    [[ -z $id || $id == \#* ]] && continue
    [ -n "${RUNS:-}" ] && [[ " $RUNS " != *" $id "* ]] && continue
    # shellcheck disable=SC2086
    step "run-$id" 240 trainsim run --model "$root/bench/gpu_validation/models/$model.json" $flags --backend cuda \
      --precision bf16 --steps 8 --warmup 3 --seed 7 --data "$TRAINSIM_CORPUS" --out "$work/runs/$id.json"
    [ -f "$work/runs/$id.json" ] && say "  $id: $(grep -m1 '"iteration_time_s"' "$work/runs/$id.json" | tr -d ' ,')" \
      "$(grep -m1 '"memory_peak_gib"' "$work/runs/$id.json" | tr -d ' ,')"
  done <"$root/bench/gpu_validation/runs.txt"
}

for stage in "$@"; do
  case $stage in
    check|tests|parity|calibrate|kernels|sinks|sweep) time_left "$stage" && say "== $stage" && "stage_$stage" ;;
    *) echo "unknown stage '$stage' (check, tests, parity, calibrate, kernels, sinks, sweep)" >&2; exit 2 ;;
  esac
done
pack
say "done; results in $out (session.log, profile.json, kernels.jsonl, results.tar.gz)"
