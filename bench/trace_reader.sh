#!/usr/bin/env bash
# bench/trace_reader.sh [TRAINSIM (default build/trainsim)] [MB (default 100)] [RUNS (default 3)]:
# the speed of `trainsim trace` on a large trace. Writes a synthetic Kineto trace of about MB
# megabytes (bench/kineto_trace_gen.py: CPU ops with Input Dims, launches, flow events, kernels on
# three streams, NCCL kernels, memcpy / memset, annotations, ProfilerStep spans) and its gzip copy
# to a scratch folder, then runs `trace --format json` on each: whole-process wall time (median,
# min, max of RUNS) and peak resident memory (/usr/bin/time -v). Prints figures only; asserts nothing.
set -euo pipefail
bin=${1:-build/trainsim}
mb=${2:-100}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$bin" ] || { echo "error: $bin is not an executable; build it (ninja -C build trainsim) or give its path" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "error: /usr/bin/time is missing (Debian: apt-get install time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$here/kineto_trace_gen.py" "$work/trace.json" --mb "$mb"
gzip -k -6 "$work/trace.json"
echo "trainsim trace: $bin, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

measure() {
  local file=$1 times=() t0 t1 i
  "$bin" trace --format json "$file" > "$work/summary.json"  # warm the page cache
  for ((i = 0; i < runs; i++)); do
    t0=$EPOCHREALTIME
    "$bin" trace --format json "$file" > /dev/null
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
  done
  /usr/bin/time -v "$bin" trace --format json "$file" 2> "$work/time.txt" > /dev/null
  local rss_kib size_mb
  rss_kib=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$work/time.txt")
  size_mb=$(stat -c %s "$file" | awk '{ printf "%.1f", $1 / 1e6 }')
  printf '%s\n' "${times[@]}" | sort -g | awk -v f="$(basename "$file")" -v size="$size_mb" -v rss="$rss_kib" '
    { t[NR] = $1 }
    END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
          printf "%-14s %7s MB  wall median %6.2f s  min %6.2f  max %6.2f  peak RSS %6.1f MiB  (%d runs)\n",
                 f, size, m, t[1], t[NR], rss / 1024, NR }'
}

measure "$work/trace.json"
measure "$work/trace.json.gz"
python3 - "$work/summary.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
print(f"read: {t['kernels_total']:,} kernels, {len(t['steps'])} steps, GPU busy {t['gpu_busy_s']:.3f} s")
PY
