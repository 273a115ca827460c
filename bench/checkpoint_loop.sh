#!/usr/bin/env bash
# The CPU checkpoint closed loop: calibrate this machine's checkpoint folder (under mpirun), run a
# plan that checkpoints, resume it (a load), predict the same plan with the profile, and compare.
# Prints predicted vs measured checkpoint save and load seconds. Timing: for a person to read, never
# for ctest (machines differ and are shared).
# Usage: bench/checkpoint_loop.sh [TRAINSIM] [--ranks N] [--dir DIR] [--full] [--repeat R]
#   --dir: the checkpoint folder to measure (default: a fresh temporary folder);
#   --full: the full calibration sweep (default --quick);
#   --repeat: rounds of calibrate + run + resume + predict (default 3), medians printed last: on a
#   shared machine one round's seconds swing with the other jobs;
#   --check (ctest): one round, no timing judged; exit 1 unless every step ran and compare lined up
#   checkpoint save and load.
set -uo pipefail
trainsim=${1:-build/trainsim}; shift || true
ranks=2; dir=""; quick=--quick; repeat=3; check=0
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) ranks=$2; shift ;; --dir) dir=$2; shift ;; --full) quick="" ;; --repeat) repeat=$2; shift ;; --check) check=1; repeat=1 ;;
    *) echo "checkpoint_loop.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
mpirun="mpirun --allow-run-as-root --oversubscribe -np $ranks"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$dir" ] || dir=$work/checkpoints
mkdir -p "$dir/run"
model=$(cd "$(dirname "$0")" && pwd)/cpu_models/gpt-ckpt.json
plan=(--dp "$ranks" --micro-batch 4 --global-batch 16 --precision fp32 --attention unfused)
value() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
round() {
  rm -rf "$dir/run"; mkdir -p "$dir/run"
  $mpirun "$trainsim" calibrate cpu $quick --checkpoint-dir "$dir" --out "$work/cpu.json" >/dev/null 2>&1 || { echo "calibration failed"; return 1; }
  $mpirun "$trainsim" run --model "$model" "${plan[@]}" --steps 8 --checkpoint-every 1 --checkpoint-dir "$dir/run" \
    --out "$work/saved.json" >/dev/null 2>&1 || { echo "run failed"; return 1; }
  # Three restarts from the same checkpoint (the last step is not saved): the median load.
  for k in 1 2 3; do
    $mpirun "$trainsim" run --model "$model" "${plan[@]}" --steps 9 --resume --checkpoint-dir "$dir/run" \
      --out "$work/resumed$k.json" >/dev/null 2>&1 || { echo "resumed run failed"; return 1; }
  done
  python3 - "$work"/resumed{1,2,3}.json >"$work/resumed.json" <<'PY'
import json, statistics, sys
docs = [json.load(open(p)) for p in sys.argv[1:]]
median = statistics.median(d['checkpoint']['load_s'] for d in docs)
print(json.dumps(next(d for d in docs if d['checkpoint']['load_s'] == median)))
PY
  # The runtime writes every rank's states (no deduplication): --checkpoint-layout every-rank.
  "$trainsim" predict --model "$model" "${plan[@]}" --gpus "$ranks" --gpu cpu --profile "$work/cpu.json" --allow-extrapolation \
    --checkpoint-layout every-rank --format json >"$work/p.json" 2>/dev/null || { echo "predict failed"; return 1; }
  for f in saved resumed; do
    "$trainsim" compare --predicted "$work/p.json" --measured "$work/$f.json" --tolerance 1000 --format json >"$work/c-$f.json" 2>/dev/null ||
      { echo "compare $f failed"; return 1; }
  done
  value "$work/c-saved.json" "' '.join(str(d['figures']['checkpoint_save_s'][k]) for k in ('predicted', 'measured'))" >>"$work/save.txt"
  value "$work/c-resumed.json" "' '.join(str(d['figures']['checkpoint_load_s'][k]) for k in ('predicted', 'measured'))" >>"$work/load.txt"
}
for ((r = 1; r <= repeat; r++)); do round || exit 1; done
if [ $check -eq 1 ]; then
  grep -q '"storage_write"' "$work/cpu.json" || { echo "the profile has no storage_write table"; exit 1; }
  grep -q '"checkpoint_save_s"' "$work/c-saved.json" || { echo "compare lined up no checkpoint save"; exit 1; }
  grep -q '"checkpoint_load_s"' "$work/c-resumed.json" || { echo "compare lined up no checkpoint load"; exit 1; }
fi
echo "checkpoint of $(basename "$model" .json), dp $ranks: $(value "$work/saved.json" "round(d['checkpoint']['written_per_rank_bytes']/1e6,1)") MB per rank, storage: $dir"
python3 - "$work/save.txt" "$work/load.txt" <<'PY'
import statistics, sys
print('%-6s %-24s %-24s %12s %12s %8s' % ('', 'predicted_s per round', 'measured_s per round', 'predicted_s', 'measured_s', 'error'))
for label, path in zip(('save', 'load'), sys.argv[1:]):
    rows = [tuple(map(float, line.split())) for line in open(path)]
    p, m = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
    print('%-6s %-24s %-24s %12.3f %12.3f %7.1f%%' % (label, ' '.join('%.3f' % r[0] for r in rows),
          ' '.join('%.3f' % r[1] for r in rows), p, m, 100 * (p / m - 1)))
PY
