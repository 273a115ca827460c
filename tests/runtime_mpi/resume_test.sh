#!/usr/bin/env bash
# Checkpoint and resume: a 2-rank run saving every step is stopped mid-way (SIGTERM to mpirun),
# resumed with --resume, and its losses must equal an uninterrupted run's, step by step.
# Usage: resume_test.sh TRAINSIM
set -u
trainsim=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--model gpt-tiny --dp 2 --micro-batch 2 --global-batch 8 --precision fp32 --attention unfused --seed 7 --steps 40)
"${mpirun[@]}" "$trainsim" run "${common[@]}" --out "$work/full.json" >/dev/null 2>&1 || { echo "uninterrupted run failed"; exit 1; }
"${mpirun[@]}" "$trainsim" run "${common[@]}" --checkpoint-every 1 --checkpoint-dir "$work/ck" --out "$work/killed.json" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if [ -f "$work/ck/latest" ] && [ "$(cat "$work/ck/latest")" -ge 3 ]; then kill -TERM "$pid"; break; fi
  sleep 0.02
done
wait "$pid" 2>/dev/null
stopped_at=$(cat "$work/ck/latest")
[ "$stopped_at" -lt 39 ] || { echo "the run finished before it could be stopped (latest $stopped_at)"; exit 1; }
"${mpirun[@]}" "$trainsim" run "${common[@]}" --checkpoint-dir "$work/ck" --resume --out "$work/resumed.json" >/dev/null 2>&1 ||
  { echo "resume failed"; exit 1; }
losses() { awk '/"iteration":/ {gsub(/[^0-9]/, "", $2); it=$2} /"loss":/ {gsub(/,/, "", $2); print it, $2}' "$1"; }
status=0
while read -r it loss; do
  full=$(losses "$work/full.json" | awk -v i="$it" '$1 == i {print $2}')
  ok=$(awk -v a="$loss" -v b="$full" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 1e-6 * (b < 0 ? -b : b)) ? 1 : 0 }')
  echo "step $it: resumed $loss, uninterrupted $full"
  [ "$ok" = 1 ] || status=1
done < <(losses "$work/resumed.json")
echo "stopped after step $stopped_at, resumed from it"
exit $status
