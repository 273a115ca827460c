#!/usr/bin/env bash
# `--gpu FILE.json`: a GPU described in a file in the catalog's schema predicts exactly what the
# catalog's own entry predicts (the cost model keys on the GPU's data, never its name), on a plan
# with TP, DP and PP, and in a search beside a catalog GPU.
# Usage: gpu_file.sh TRAINSIM GPU_FILE (a copy of h100-sxm-80gb's entry under another name)
set -euo pipefail
trainsim=$1 file=$2
fail() { echo "FAIL: $*"; exit 1; }
plan=(--model llama3-8b --gpus 64 --tp 2 --pp 2 --global-batch 256 --format json)
a=$("$trainsim" predict --gpu "$file" "${plan[@]}")
b=$("$trainsim" predict --gpu h100-sxm-80gb "${plan[@]}")
python3 - "$a" "$b" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for key in ("iteration_time_s", "memory_peak_gib", "tokens_per_s_per_gpu"):
    if key in a:
        assert a[key] == b[key], (key, a[key], b[key])
assert a["breakdown"] == b["breakdown"], (a["breakdown"], b["breakdown"])
assert a["inputs"]["hardware"]["gpu"]["name"] == "my-h100", a["inputs"]["hardware"]["gpu"]
print("same prediction:", a["iteration_time_s"], "s,", a["memory_peak_gib"], "GiB")
PY
out=$("$trainsim" search --model llama3-8b --gpu "$file,h200-sxm-141gb" --gpus 64 --global-batch 256 --top 1)
grep -q "my-h100 (\$3.00/GPU-hour, 64 GPUs)" <<<"$out" || fail "search does not rank the file's GPU: $out"
echo ok
