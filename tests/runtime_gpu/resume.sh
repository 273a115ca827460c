#!/usr/bin/env bash
# CUDA checkpoints: a one-GPU run of 12 steps saving every 4, resumed to 20 steps, must give the
# losses of an uninterrupted 20-step run (relative 1e-3: the embedding gradient's atomics make two
# CUDA runs differ in the last bits). With RANKS 2 (--dp 2 --zero 1, one NCCL_HOSTID per rank on one
# GPU) the resume also rebuilds the working weights from every rank's ZeRO shard (ZERO 1, default)
# or starts from the shards alone (ZERO 3).
# Usage: resume.sh TRAINSIM [RANKS [ZERO]]. Exit 77 (skipped) without a GPU.
set -u
trainsim=$1
ranks=${2:-1}
zero=${3:-1}
# The GPU check, the work folder and mpirun's root settings, as parity.sh.
source "$(dirname "$0")/prelude.sh"
common=(--model gpt-tiny --backend cuda --micro-batch 2 --global-batch 8 --seed 5 --warmup 0)
[ "$ranks" -gt 1 ] && common+=(--dp "$ranks" --zero "$zero")
[ -n "${TRAINSIM_DATA:-}" ] && common+=(--data "$TRAINSIM_DATA")
run() { timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$(dirname "$0")/own_host.sh" "$trainsim" run "${common[@]}" "$@" \
  >"$work/log" 2>&1 || { echo "FAILED: $*"; cat "$work/log"; exit 1; }; }
run --steps 20 --out "$work/full.json"
run --steps 12 --checkpoint-every 4 --checkpoint-dir "$work/ck" --out "$work/first.json"
[ "$(cat "$work/ck/latest")" = 11 ] || { echo "latest is $(cat "$work/ck/latest"), expected 11"; exit 1; }
run --steps 20 --checkpoint-dir "$work/ck" --resume --out "$work/resumed.json"
losses() { awk '/"iteration":/ {gsub(/[^0-9]/, "", $2); it=$2} /"loss":/ {gsub(/,/, "", $2); print it, $2}' "$1"; }
status=0
count=0
while read -r it loss; do
  full=$(losses "$work/full.json" | awk -v i="$it" '$1 == i {print $2}')
  ok=$(awk -v a="$loss" -v b="$full" 'BEGIN { d = a - b; if (d < 0) d = -d; print (b != "" && d <= 1e-3 * (b < 0 ? -b : b)) ? 1 : 0 }')
  echo "step $it: resumed $loss, uninterrupted $full $([ "$ok" = 1 ] && echo ok || echo DIFFERS)"
  [ "$ok" = 1 ] || status=1
  count=$((count + 1))
done < <(losses "$work/resumed.json")
[ "$count" = 8 ] || { echo "the resumed run has $count steps, expected 8 (12-19)"; status=1; }
exit $status
