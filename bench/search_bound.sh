#!/usr/bin/env bash
# bench/search_bound.sh [TRAINSIM (default build/trainsim)]: what the search's early stop
# (SearchOptions::screen_margin) saves and whether it costs an answer. Each search of the README and
# docs runs twice, with --simulate-all (every one of the best 200 screened plans simulated) and
# without (simulation stops once no plan left can enter the --top shown, and a search ranked after
# better ones stops at its own best). Prints per search: the plans simulated, wall time, the
# screen's largest overestimate of a simulated plan (what the 5% margin has to cover), and whether
# the two ranked the same plans at the same times (table, per-GPU-type answer, Pareto front).
# Prints figures only; the equality on small searches is a ctest (tests/sim/test_search.cpp).
set -euo pipefail
bin=${1:-build/trainsim}
[ -x "$bin" ] || { echo "error: $bin is not an executable; build it (ninja -C build trainsim) or give its path" >&2; exit 2; }
command -v python3 >/dev/null || { echo "error: python3 is needed to compare the JSON results" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

four="--gpu h100-sxm-80gb,h200-sxm-141gb,b200-sxm-180gb,gb200-nvl72 --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80,b200-sxm-180gb=5.00,gb200-nvl72=6.00"
searches=(
  "llama3-405b-4gpus|--model llama3-405b $four --gpus 512 --global-batch 1024 --precision fp8,mxfp8,nvfp4 --objective cost"
  "llama3-405b-4gpus-even|--model llama3-405b $four --gpus 512 --global-batch 1024 --precision fp8,mxfp8,nvfp4 --objective cost --no-uneven-pipeline"
  "deepseek-v3-4gpus|--model deepseek-v3 $four --gpus 256 --global-batch 4096 --precision fp8,mxfp8 --objective cost"
  "llama3-8b-h100-h200|--model llama3-8b --gpu h100-sxm-80gb,h200-sxm-141gb --gpus 128 --global-batch 512 --train-tokens 2e12 --deadline-days 30 --objective cost --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80"
  "mixtral-8x7b-64|--model mixtral-8x7b --seq-len 4096 --cluster dgx-h100 --gpus 64 --global-batch 512 --framework megatron-core --top 4"
  "llama3-8b-128k-cp|--model llama3-8b --seq-len 131072 --cluster dgx-h100 --gpus 64 --global-batch 64 --framework megatron-core --top 3"
  "llama3-70b-4096-goodput|--model llama3-70b --cluster dgx-h100 --gpus 4096 --global-batch 2048 --train-tokens 15e12 --objective effective-time --top 3"
  "llama3-70b-max-gpus|--model llama3-70b --gpu h100-sxm-80gb,h200-sxm-141gb --max-gpus 512 --global-batch 512 --train-tokens 1e12 --deadline-days 30 --objective cost"
  "gpt3-175b-512-a100|--model gpt3-175b --gpu a100-sxm-80gb --gpus 512 --global-batch 1536 --max-micro-batch 64"
  "qwen3-235b-256|--model qwen3-235b-a22b --cluster dgx-h100 --gpus 256 --global-batch 2048 --precision fp8"
  "llama3-405b-512-h100|--model llama3-405b --gpu h100-sxm-80gb --gpus 512 --global-batch 1024 --precision fp8 --top 20"
)

echo "search early stop: $bin ($("$bin" --version)), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %16s %16s %10s %s\n' "search" "simulated all/stop" "wall s all/stop" "screen over" "same answer"
for entry in "${searches[@]}"; do
  label=${entry%%|*}
  read -r -a args <<<"${entry#*|}"
  t0=$EPOCHREALTIME; "$bin" search "${args[@]}" --simulate-all --format json >"$out/all.json"; t1=$EPOCHREALTIME
  "$bin" search "${args[@]}" --format json >"$out/stop.json"; t2=$EPOCHREALTIME
  python3 - "$out/all.json" "$out/stop.json" "$label" "$t0" "$t1" "$t2" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
label, t0, t1, t2 = sys.argv[3], *map(float, sys.argv[4:7])
sim = lambda d: sum(s["simulated"] for s in d["searches"])
over = max([s["screen_overestimate"] for s in a["searches"]] or [0])
same = all(json.dumps(a.get(k)) == json.dumps(b.get(k)) for k in ("answer", "plans", "pareto"))
print(f"{label:<26} {sim(a):>8}/{sim(b):<7} {t1 - t0:>8.2f}/{t2 - t1:<7.2f} {100 * over:>9.2f}% {'yes' if same else 'NO'}")
PY
done
