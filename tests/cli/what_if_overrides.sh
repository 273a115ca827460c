#!/usr/bin/env bash
# What-if overrides on a GPU's figures (--peak-tflops, --hbm-gb-per-s, --memory-gib,
# --nvlink-gb-per-s, --nvlink-domain): an H100 given the H200's HBM bandwidth and capacity predicts
# what the H200 predicts in BF16 (the two share every other figure the BF16 model reads);
# --peak-tflops scales every tensor-core peak (FP8 stays twice the 16-bit one) and the GEMMs with
# it; --nvlink-domain is the node (--gpus-per-node 72 on the H200 predicts the same), on an AMD
# full-mesh board a domain other than the board is a switch, and the prediction records what was
# changed.
# Usage: what_if_overrides.sh TRAINSIM
set -euo pipefail
trainsim=$1
plan=(--model llama3-8b --gpus 16 --tp 2 --pp 2 --global-batch 64 --format json)
h200=$("$trainsim" predict --gpu h200-sxm-141gb "${plan[@]}")
h100_as_h200=$("$trainsim" predict --gpu h100-sxm-80gb --hbm-gb-per-s 4800 --memory-gib 140.4013671875 "${plan[@]}")
b200=$("$trainsim" predict --gpu b200-sxm-180gb "${plan[@]}")
b200_faster=$("$trainsim" predict --gpu b200-sxm-180gb --peak-tflops 4500 "${plan[@]}")
rack=(--model llama3-70b --gpus 144 --tp 8 --cp 2 --global-batch 72 --format json)
domain=$("$trainsim" predict --gpu h200-sxm-141gb --nvlink-domain 72 --nvlink-gb-per-s 900 "${rack[@]}")
per_node=$("$trainsim" predict --gpu h200-sxm-141gb --gpus-per-node 72 --nvlink-gb-per-s 900 "${rack[@]}")
small=$("$trainsim" predict --gpu gb200-nvl72 --nvlink-domain 8 "${rack[@]}")
nvl72=$("$trainsim" predict --gpu gb200-nvl72 "${rack[@]}")
tight=$("$trainsim" predict --gpu b200-sxm-180gb --memory-gib 20 "${plan[@]}")
mesh=$("$trainsim" predict --gpu mi355x-oam-288gb "${rack[@]}")
mesh_rack=$("$trainsim" predict --gpu mi355x-oam-288gb --nvlink-domain 72 "${rack[@]}")
python3 - "$h200" "$h100_as_h200" "$b200" "$b200_faster" "$domain" "$per_node" "$small" "$nvl72" "$tight" "$mesh" "$mesh_rack" <<'PY'
import json, sys
h200, h100, b200, fast, domain, per_node, small, nvl72, tight, mesh, mesh_rack = (json.loads(a) for a in sys.argv[1:])
assert h100["iteration_time_s"] == h200["iteration_time_s"], (h100["iteration_time_s"], h200["iteration_time_s"])
assert h100["memory_capacity_gib"] == h200["memory_capacity_gib"], (h100["memory_capacity_gib"], h200["memory_capacity_gib"])
gpu = h100["inputs"]["hardware"]["gpu"]
assert gpu["memory_bandwidth_gb_per_s"] == 4800 and "what-if: --hbm-gb-per-s 4800 (the GPU's: 3350)" in gpu["source"], gpu["source"][-160:]
g = fast["inputs"]["hardware"]["gpu"]
assert (g["peak_bf16_tflops"], g["peak_fp16_tflops"], g["peak_fp8_tflops"]) == (4500, 4500, 9000), g
assert fast["iteration_time_s"] < 0.8 * b200["iteration_time_s"], (fast["iteration_time_s"], b200["iteration_time_s"])
assert domain["iteration_time_s"] == per_node["iteration_time_s"], (domain["iteration_time_s"], per_node["iteration_time_s"])
assert domain["inputs"]["hardware"]["gpus_per_node"] == 72 and nvl72["inputs"]["hardware"]["gpus_per_node"] == 72
assert small["inputs"]["hardware"]["gpus_per_node"] == 8
assert nvl72["iteration_time_s"] < small["iteration_time_s"], (nvl72["iteration_time_s"], small["iteration_time_s"])
assert tight["fits"] is False and tight["memory_capacity_gib"] == 20, (tight["fits"], tight["memory_capacity_gib"])
g = mesh_rack["inputs"]["hardware"]["gpu"]
assert "what-if: --nvlink-domain 72 (the GPU's: 8) as a switch (the GPU's full mesh is a board of 8)" in g["source"], g["source"][-200:]
assert mesh_rack["inputs"]["hardware"]["gpus_per_node"] == 72
assert mesh_rack["iteration_time_s"] < mesh["iteration_time_s"], (mesh_rack["iteration_time_s"], mesh["iteration_time_s"])
print("ok: H100 as H200", h100["iteration_time_s"], "s; B200 at 4500 TF", fast["iteration_time_s"], "s of", b200["iteration_time_s"],
      "; NVL72 domain", nvl72["iteration_time_s"], "s vs 8-GPU nodes", small["iteration_time_s"], "s")
PY
