#!/usr/bin/env bash
# GPU loss parity of the CUDA runtime (docs/cuda-runtime.md). gpt-tiny, 5 steps, the same seed:
#   1. CUDA on one GPU (bf16) against the CPU backend on one rank (fp32): relative 3e-2 per step
#      (bf16 weights and activations against fp32; the curves start from the identical model);
#   2. with RANKS > 1, the given layout on the CUDA backend, all ranks on this machine's GPUs (one
#      GPU is enough: each rank gets its own NCCL_HOSTID, so NCCL treats them as separate hosts and
#      uses sockets), against the one-GPU CUDA run (relative 1e-2) and the CPU run (3e-2).
# Usage: parity.sh TRAINSIM RANKS [plan flags...]    e.g. parity.sh build/trainsim 2 --tp 2 --sequence-parallel
# TRAINSIM_DATA: the text to train on (default: the build's corpus). PARITY_MODEL: the model (default
# gpt-tiny; tests/data/models/llama-tiny.json checks the Llama-style path, moe-tiny.json the MoE one).
# Exit 77 (ctest: skipped) when nvidia-smi -L lists no GPU; each run is killed after 300 s (a hang fails).
set -u
trainsim=$1
ranks=$2
shift 2
layout=("$@")
source "$(dirname "$0")/prelude.sh"  # the GPU check (exit 77), $work, mpirun's root settings
common=(--model "${PARITY_MODEL:-gpt-tiny}" --micro-batch 2 --global-batch 8 --seed 11 --steps 5 --warmup 1)
[ -n "${TRAINSIM_DATA:-}" ] && common+=(--data "$TRAINSIM_DATA")  # e.g. the device kit's corpus

run() {  # NAME COMMAND...: runs, keeps the log, prints it on failure
  local name=$1
  shift
  if ! timeout 300 "$@" >"$work/$name.log" 2>&1; then
    echo "FAILED: $name: $*"
    cat "$work/$name.log"
    exit 1
  fi
}

losses() { awk '/"iteration":/ {gsub(/[^0-9]/, "", $2); it=$2} /"loss":/ {gsub(/,/, "", $2); print it, $2}' "$1"; }

status=0
compare() {  # A.json B.json TOLERANCE LABEL
  paste <(losses "$1") <(losses "$2") | while read -r it a _ b; do
    awk -v it="$it" -v a="$a" -v b="$b" -v tol="$3" -v label="$4" 'BEGIN {
      d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; rel = d / m;
      printf "%s step %d: %.5f vs %.5f (relative %.2e, tolerance %.0e) %s\n", label, it, a, b, rel, tol, rel <= tol ? "ok" : "DIFFERS";
      exit rel <= tol ? 0 : 1 }' || echo "differs" >>"$work/differs"
  done
  [ "$(losses "$1" | wc -l)" -eq 5 ] || { echo "$4: $1 has $(losses "$1" | wc -l) of 5 steps"; echo x >>"$work/differs"; }
}

run cpu "$trainsim" run "${common[@]}" --backend cpu --precision fp32 --out "$work/cpu.json"
run cuda "$trainsim" run "${common[@]}" --backend cuda --precision bf16 --out "$work/cuda.json"
compare "$work/cuda.json" "$work/cpu.json" 3e-2 "cuda (1 GPU, bf16) vs cpu (fp32)"

if [ "$ranks" -gt 1 ]; then
  run layout mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$(dirname "$0")/own_host.sh" "$trainsim" run "${common[@]}" "${layout[@]}" \
    --backend cuda --precision bf16 --out "$work/layout.json"
  compare "$work/layout.json" "$work/cuda.json" 1e-2 "cuda ${layout[*]} vs cuda (1 GPU)"
  compare "$work/layout.json" "$work/cpu.json" 3e-2 "cuda ${layout[*]} vs cpu (fp32)"
fi

first=$(losses "$work/cuda.json" | head -1 | cut -d' ' -f2)
last=$(losses "$work/cuda.json" | tail -1 | cut -d' ' -f2)
awk -v a="$first" -v b="$last" 'BEGIN { exit b < a ? 0 : 1 }' || { echo "the CUDA loss does not fall: $first -> $last"; status=1; }
[ -f "$work/differs" ] && status=1
[ "$status" = 0 ] && echo "parity: ok"
exit "$status"
