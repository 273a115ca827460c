#!/usr/bin/env bash
# `trace --out` then `compare`, end to end: a prediction, the trace as a trainsim.measurement
# (with and without --inputs-from), compare's table with the trace's phases and the GEMM row summed
# over roles, compare --format json, and `report` of the measurement. Exit 77 (skipped) when the
# trace file is absent.
# Usage: trace_compare.sh TRAINSIM TRACE WORKDIR
set -euo pipefail
trainsim=$1 trace=$2 work=$3
[[ -f $trace ]] || { echo "skipped: $trace is absent"; exit 77; }
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$trainsim" predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 8 --global-batch 8 --format json > "$work/p.json"
"$trainsim" trace "$trace" --out "$work/m.json" > "$work/summary.txt" 2> "$work/stderr.txt"
grep -q "measurement written to $work/m.json: median step" "$work/stderr.txt" || fail "no written line: $(cat "$work/stderr.txt")"
python3 - "$work/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "trainsim.measurement", d["schema"]
assert d["backend"] == "trace"
b, split = d["breakdown"], d["compute_split"]
parts = split["forward_s"] + split["backward_s"] + b["tp_comm_exposed_s"] + b["dp_comm_exposed_s"] + b["pp_comm_exposed_s"] + b["bubble_s"] + b["optimizer_s"]
for it in d["iterations"]:
    s = sum(it[k] for k in ("forward_s", "backward_s", "tp_comm_s", "dp_comm_s", "pp_comm_s", "bubble_s", "optimizer_s"))
    assert abs(s - it["time_s"]) <= 1e-9 + 1e-9 * it["time_s"], (s, it["time_s"])   # the phases partition each step
assert d["iteration_time_s"] > 0
assert "model" not in d["inputs"] and d["inputs"]["trace_files"], d["inputs"]
print("measurement ok:", len(d["iterations"]), "steps, median", d["iteration_time_s"], "s")
PY
# Without --inputs-from compare takes the prediction's model and plan, and says so.
out=$("$trainsim" compare --predicted "$work/p.json" --measured "$work/m.json" --tolerance 1000000)
grep -q "does not say which model and plan ran" <<<"$out" || fail "compare does not say the run is unstated: $out"
grep -q "iteration time" <<<"$out" || fail "no iteration row: $out"
if grep -q "gemm_other" <<<"$out"; then
  grep -q "gemm, all roles" <<<"$out" || fail "measured gemm_other but no all-roles row: $out"
fi
# With --inputs-from the measurement carries the prediction's model and plan: no mismatch.
"$trainsim" trace "$trace" --out "$work/m2.json" --inputs-from "$work/p.json" > /dev/null 2>&1
out=$("$trainsim" compare --predicted "$work/p.json" --measured "$work/m2.json" --tolerance 1000000 --format json)
python3 - <<PY
import json
d = json.loads('''$out''')
assert d["input_differences"] == [], d["input_differences"]
assert d["figures"]["iteration_time_s"]["measured"] > 0
PY
# A different plan than the one stated is a mismatch (exit 2) unless --allow-mismatch.
"$trainsim" predict --model llama3-8b --gpu h100-sxm-80gb --gpus 8 --tp 4 --dp 2 --global-batch 8 --format json > "$work/p2.json"
set +e
"$trainsim" compare --predicted "$work/p2.json" --measured "$work/m2.json" --tolerance 1000000 > /dev/null 2> "$work/mismatch.txt"
rc=$?
set -e
[[ $rc == 2 ]] || fail "a plan mismatch should exit 2, got $rc"
grep -q "/inputs/plan/tp" "$work/mismatch.txt" || fail "the mismatch does not name /inputs/plan/tp: $(cat "$work/mismatch.txt")"
"$trainsim" report "$work/m.json" --out "$work/m.html" > /dev/null
grep -q "Measured from a profiler trace" "$work/m.html" || fail "the report does not say it is a trace"
echo "ok"
