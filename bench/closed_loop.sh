#!/usr/bin/env bash
# The CPU closed loop: calibrate this machine (under mpirun), predict each plan with that profile,
# run the same plan for real, and compare. Prints predicted vs measured iteration time per plan.
# Usage: bench/closed_loop.sh [TRAINSIM] [--quick] [--tolerance T] [--two-rank-only] [--ops] [--check]
#   exit 3 if any plan is over T (timing: for a person who asks, never for ctest);
#   --ops also prints compare's per-op-category table of every plan;
#   --check (ctest): no tolerance; exit 1 unless every step ran and every file is well-formed
#   (the measurement and the prediction carry op categories, compare lines them up).
set -uo pipefail
trainsim=${1:-build/trainsim}; shift || true
quick=""; tolerance=0.15; ranks_list="2 4"; ops=0; check=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick ;; --tolerance) tolerance=$2; shift ;; --two-rank-only) ranks_list=2 ;;
    --ops) ops=1 ;; --check) check=1; tolerance=1000 ;;
    *) echo "closed_loop.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Ranks waiting in MPI yield the core instead of spinning: with more ranks than cores, spinning
# ranks take the time of the ones with work (a 4-rank plan on 2 cores ran 1.8x slower).
export OMPI_MCA_mpi_yield_when_idle=1
mpirun="mpirun --allow-run-as-root --oversubscribe -np"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--micro-batch 4 --global-batch 16 --precision fp32 --attention unfused)
models=$(cd "$(dirname "$0")" && pwd)/../tests/data/models
cpu_models=$(cd "$(dirname "$0")" && pwd)/cpu_models
# A profile per rank count: ranks share the cores (oversubscribed beyond them), as in the run.
for ranks in $ranks_list; do
  $mpirun $ranks "$trainsim" calibrate cpu $quick --out "$work/cpu$ranks.json" >/dev/null 2>&1 || { echo "calibration failed"; exit 1; }
done
status=0
printf '%-48s %12s %12s %8s\n' plan predicted_s measured_s error
# RANKS|MODEL|LAYOUT: gpt-tiny (GPT-2 style), llama-tiny (RMSNorm, RoPE, GQA, SwiGLU, untied head),
# gpt-4l (gpt-tiny with 4 layers, for the interleaved schedule).
for entry in "2|gpt-tiny|--dp 2" "2|gpt-tiny|--tp 2" "2|gpt-tiny|--tp 2 --sequence-parallel" "2|gpt-tiny|--pp 2" \
             "2|$cpu_models/gpt-4l.json|--pp 2 --schedule interleaved --vpp 2" "2|$models/llama-tiny.json|--tp 2 --sequence-parallel" \
             "4|gpt-tiny|--dp 2 --tp 2"; do
  ranks=${entry%%|*}; rest=${entry#*|}; model=${rest%%|*}; layout=${rest#*|}
  [[ " $ranks_list " == *" $ranks "* ]] || continue
  # shellcheck disable=SC2086
  $mpirun "$ranks" "$trainsim" run --model "$model" "${common[@]}" $layout --steps 16 --out "$work/m.json" >/dev/null 2>&1 || { echo "run $layout failed"; status=1; continue; }
  # shellcheck disable=SC2086
  "$trainsim" predict --model "$model" "${common[@]}" $layout --gpus "$ranks" --gpu cpu --profile "$work/cpu$ranks.json" --allow-extrapolation \
    --format json >"$work/p.json" 2>/dev/null || { echo "predict $layout failed"; status=1; continue; }
  "$trainsim" compare --predicted "$work/p.json" --measured "$work/m.json" --tolerance "$tolerance" --format json >"$work/c.json" 2>/dev/null
  rc=$?
  [ $rc -eq 3 ] && status=3
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then echo "compare $layout failed (exit $rc)"; status=1; continue; fi
  if [ $check -eq 1 ]; then
    for f in m p c; do grep -q '"op_categories"' "$work/$f.json" || { echo "$f.json of $layout has no op_categories"; status=1; }; done
    grep -q '"gemm_qkv"' "$work/c.json" || { echo "compare of $layout lines up no op category"; status=1; }
    grep -q '"page_faults_per_iteration"' "$work/m.json" || { echo "measurement of $layout has no page fault count"; status=1; }
  fi
  figure() { grep -A3 '"iteration_time_s": {' "$work/c.json" | grep "\"$1\"" | head -1 | tr -d ' ,' | cut -d: -f2; }
  pred=$(figure predicted); meas=$(figure measured)
  err=$(grep '"iteration_time_error"' "$work/c.json" | tr -d ' ,' | cut -d: -f2)
  printf '%-48s %12.4f %12.4f %7.1f%%\n' "$(basename "$model" .json) $layout" "$pred" "$meas" "$(awk -v e="$err" 'BEGIN{print 100*e}')"
  [ $ops -eq 1 ] && "$trainsim" compare --predicted "$work/p.json" --measured "$work/m.json" --tolerance "$tolerance" 2>/dev/null |
    sed -n '/per op category/,/^  tp_comm:/p'
done
exit $status
