#!/usr/bin/env bash
# `--gpu FILE.json`: a GPU described in a file in the catalog's schema predicts exactly what the
# catalog's own entry predicts (the cost model keys on the GPU's data, never its name), on a plan
# with TP, DP and PP, in each precision given, and in a search beside a catalog GPU.
# Usage: gpu_file.sh TRAINSIM GPU_FILE [CATALOG_GPU FILE_GPU_NAME PRICE PRECISION...]
# (default: tests/data/gpus/my-h100.json, a copy of h100-sxm-80gb's entry named my-h100, $3.00, bf16)
set -euo pipefail
trainsim=$1 file=$2 catalog_gpu=${3:-h100-sxm-80gb} name=${4:-my-h100} price=${5:-3.00}
shift $(( $# < 5 ? $# : 5 ))
precisions=("${@:-bf16}")
fail() { echo "FAIL: $*"; exit 1; }
for precision in "${precisions[@]}"; do
  plan=(--model llama3-8b --gpus 64 --tp 2 --pp 2 --global-batch 256 --precision "$precision" --format json)
  a=$("$trainsim" predict --gpu "$file" "${plan[@]}")
  b=$("$trainsim" predict --gpu "$catalog_gpu" "${plan[@]}")
  python3 - "$a" "$b" "$name" <<'PY'
import json, sys
a, b, name = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
for key in ("iteration_time_s", "memory_peak_gib", "tokens_per_s_per_gpu"):
    if key in a:
        assert a[key] == b[key], (key, a[key], b[key])
assert a["breakdown"] == b["breakdown"], (a["breakdown"], b["breakdown"])
assert a["inputs"]["hardware"]["gpu"]["name"] == name, a["inputs"]["hardware"]["gpu"]
print("same prediction:", a["iteration_time_s"], "s,", a["memory_peak_gib"], "GiB")
PY
done
out=$("$trainsim" search --model llama3-8b --gpu "$file,h200-sxm-141gb" --gpus 64 --global-batch 256 --top 1)
grep -q "$name (\\\$$price/GPU-hour, 64 GPUs)" <<<"$out" || fail "search does not rank the file's GPU: $out"
echo ok
