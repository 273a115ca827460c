#!/usr/bin/env bash
# bench/startup.sh [TRAINSIM (default build/trainsim)] [RUNS (default 20)]: whole-process wall time
# (bash's EPOCHREALTIME around each run: median, min, max in ms) and peak resident memory
# (/usr/bin/time's %M of one more run, MiB) of the commands a sweep or a laptop pays start-up on:
# --version, catalog, and predict of GPT-3 175B on 1,024 A100s (the README's example plan).
# Prints figures only; it asserts nothing (the no-CUDA start-up itself is a ctest).
set -euo pipefail
bin=${1:-build/trainsim}
runs=${2:-20}
[ -x "$bin" ] || { echo "error: $bin is not an executable; build it (ninja -C build trainsim) or give its path" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "error: /usr/bin/time is missing (Debian: apt-get install time)" >&2; exit 2; }

measure() {
  local label=$1; shift
  local times=() t0 t1 i rss
  "$bin" "$@" >/dev/null  # warm the page cache
  for ((i = 0; i < runs; i++)); do
    t0=$EPOCHREALTIME
    "$bin" "$@" >/dev/null
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) * 1000 }')")
  done
  rss=$(/usr/bin/time -f %M "$bin" "$@" 2>&1 >/dev/null | tail -1)
  printf '%s\n' "${times[@]}" | sort -g | awk -v label="$label" -v rss="$rss" '
    { t[NR] = $1 }
    END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
          printf "%-28s median %8.1f ms  min %8.1f  max %8.1f  peak RSS %7.1f MiB  (%d runs)\n", label, m, t[1], t[NR], rss / 1024, NR }'
}

echo "trainsim start-up: $bin ($("$bin" --version)), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
measure "--version" --version
measure "catalog" catalog
measure "predict gpt3-175b 1024 GPUs" predict --model gpt3-175b --gpu a100-sxm-80gb --gpus 1024 --tp 8 --pp 8 --micro-batch 1 --global-batch 1536
