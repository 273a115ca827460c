#!/usr/bin/env bash
# The ./run.sh demo. Plan search (the intended demo: Llama-3-70B on 256 H100s) is not built yet,
# so today it shows what is: the catalog and the model math for one model under one plan.
set -euo pipefail
trainsim=$1
echo "== trainsim catalog"
"$trainsim" catalog
echo
echo "== trainsim model --model llama3-70b --gpus 256 --tp 8 --pp 4 --micro-batch 1 --global-batch 512 --zero 1 --recompute selective --sequence-parallel"
"$trainsim" model --model llama3-70b --gpus 256 --tp 8 --pp 4 --micro-batch 1 --global-batch 512 --zero 1 \
  --recompute selective --sequence-parallel
echo
echo "Plan search (trainsim search) is not built yet: it arrives with issue 4."
