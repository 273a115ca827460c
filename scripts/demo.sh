#!/usr/bin/env bash
# The ./run.sh demo: which plan, and which GPU, to train Llama-3-70B on 1T tokens with 256 GPUs —
# ranked by time, then by cost across H100 and H200 — the best plan as Megatron-LM arguments,
# its simulated iteration as a Perfetto trace, trainsim's error on published runs, and an HTML report with charts.
set -euo pipefail
trainsim=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${TRAINSIM_DEMO_DIR:-$root/build/demo}
mkdir -p "$out"
echo "== Fastest plans: Llama-3-70B, 256 x H100 (DGX H100), global batch 512, 1T tokens"
"$trainsim" search --model llama3-70b --cluster dgx-h100 --gpus 256 --global-batch 512 --train-tokens 1e12 \
  --top 5 --export megatron
echo
echo "== Cheapest plans: H100 at \$2.50 or H200 at \$3.80 per GPU-hour, same job, 30-day deadline"
"$trainsim" search --model llama3-70b --gpu h100-sxm-80gb,h200-sxm-141gb --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80 \
  --gpus 256 --global-batch 512 --train-tokens 1e12 --deadline-days 30 --objective cost --top 5 | sed -n '1,12p'
echo
echo "== A hand-written plan with a trace of its simulated iteration"
"$trainsim" predict --model llama3-70b --cluster dgx-h100 --gpus 256 --global-batch 512 --tp 8 --pp 4 --vpp 5 \
  --zero 1 --recompute selective --sequence-parallel --trace "$out/llama3-70b-tp8-pp4.trace.json" | tail -n 10
echo
echo "== Accuracy on the published training runs (those it cannot simulate yet listed with the reason)"
"$trainsim" validate --runs "$root/tests/data/validation/published-runs.json" --summary || [ $? -eq 3 ]
echo
echo "== A report with charts of the above (search, the hand-written plan, the published runs)"
"$trainsim" search --model llama3-70b --gpu h100-sxm-80gb,h200-sxm-141gb --price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80 \
  --gpus 256 --global-batch 512 --train-tokens 1e12 --deadline-days 30 --objective cost --top 10 --format json >"$out/search.json"
"$trainsim" predict --model llama3-70b --cluster dgx-h100 --gpus 256 --global-batch 512 --tp 8 --pp 4 --vpp 5 \
  --zero 1 --recompute selective --sequence-parallel --format json >"$out/predict.json"
"$trainsim" validate --runs "$root/tests/data/validation/published-runs.json" --format json >"$out/validate.json" || [ $? -eq 3 ]
"$trainsim" report "$out/search.json" "$out/predict.json" "$out/validate.json" --title "trainsim demo: Llama-3-70B on 256 GPUs" \
  --out "$out/report.html"
