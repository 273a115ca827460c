#!/usr/bin/env bash
# Turns what bench/gpu_session.sh measured on a GPU machine into the measured-vs-predicted report:
# predicts every measured plan of bench/gpu_validation/runs.txt with the profile calibrated in the same
# session (trainsim predict --profile), compares (trainsim compare) and writes DEST/README.md (the
# table, errors good or bad, MFU of the runtime, provenance) beside the raw files (profile.json,
# runs/*.json measurements, predicted/*.json, compared/*.json) so every figure can be re-checked.
# Usage: bench/gpu_report.sh RESULTS_DIR_OR_TAR_GZ [DEST (default reports/measured/DATE-GPU)] [TRAINSIM]
# Needs python3 (standard library) for the table.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
results=$1
trainsim=${3:-$root/build/trainsim}
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
if [ -d "$results" ]; then cp -r "$results"/. "$src/"; else tar -xzf "$results" -C "$src"; fi
[ -f "$src/profile.json" ] || { echo "error: $results has no profile.json (run the calibrate stage)" >&2; exit 2; }
device=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["provenance"].get("device", ""))' "$src/profile.json")
case $device in
  *H200*) gpu=h200-sxm-141gb ;;
  *H100*) gpu=h100-sxm-80gb ;;
  *A100*80GB*) gpu=a100-sxm-80gb ;;
  *A100*) gpu=a100-sxm-40gb ;;
  *) echo "error: no catalog GPU for the profile's device \"$device\" (add a case here)" >&2; exit 2 ;;
esac
dest=${2:-$root/reports/measured/$(date -u +%Y-%m-%d)-$gpu}
mkdir -p "$dest/runs" "$dest/predicted" "$dest/compared"
cp "$src/profile.json" "$dest/profile.json"
[ -f "$src/nvidia-smi.txt" ] && cp "$src/nvidia-smi.txt" "$dest/"
[ -f "$src/session.log" ] && cp "$src/session.log" "$dest/"
while read -r id model flags; do
  [[ -z $id || $id == \#* ]] && continue
  [ -f "$src/runs/$id.json" ] || { echo "$id: not measured"; continue; }
  cp "$src/runs/$id.json" "$dest/runs/"
  # shellcheck disable=SC2086
  "$trainsim" predict --model "$root/bench/gpu_validation/models/$model.json" $flags --precision bf16 --gpus 1 --gpu "$gpu" \
    --profile "$dest/profile.json" --allow-extrapolation --format json >"$dest/predicted/$id.json"
  "$trainsim" compare --predicted "$dest/predicted/$id.json" --measured "$dest/runs/$id.json" --tolerance 0.05 \
    --format json >"$dest/compared/$id.json" || [ $? = 3 ]  # 3: over the 5% goal, still a result
done <"$root/bench/gpu_validation/runs.txt"

python3 - "$dest" "$gpu" "$root/bench/gpu_validation/runs.txt" <<'PY'
import json, os, statistics, sys
dest, gpu, runs_txt = sys.argv[1:4]
rows = []
for line in open(runs_txt):
    if not line.strip() or line.startswith("#"):
        continue
    run_id, model = line.split()[:2]
    path = os.path.join(dest, "compared", run_id + ".json")
    if not os.path.exists(path):
        continue
    c, p = json.load(open(path)), json.load(open(os.path.join(dest, "predicted", run_id + ".json")))
    m = json.load(open(os.path.join(dest, "runs", run_id + ".json")))
    plan = m["inputs"]["plan"]
    t, mem = c["figures"]["iteration_time_s"], c["figures"]["memory_peak_gib"]
    rows.append(dict(id=run_id, model=model, seq=m["inputs"]["model"]["seq_len"], mb=plan["micro_batch"], gb=plan["global_batch"],
                     rc=plan["recompute"], tm=t["measured"], tp=t["predicted"], te=t["error"], mm=mem["measured"],
                     mp=mem["predicted"], me=mem["error"], mfu_m=p["mfu"] * p["iteration_time_s"] / t["measured"], mfu_p=p["mfu"],
                     parts={k: c["figures"][k] for k in ("compute_s", "optimizer_s") if k in c["figures"]},
                     split=m.get("compute_split", {}), context=m.get("context", {})))
prof = json.load(open(os.path.join(dest, "profile.json")))["provenance"]
out = [f"# Single-GPU runs of the CUDA runtime against trainsim's prediction ({gpu})", "",
       "Measured with `bench/gpu_session.sh` (kit of `scripts/device_kit.sh`), predicted and compared with",
       "`bench/gpu_report.sh` using the profile calibrated on the same GPU in the same session (`profile.json`).",
       "error = predicted / measured - 1. Memory: the runtime's own allocations at their peak (what predict models);",
       "MFU of the runtime = model FLOPs / (measured time x peak), the peak of the catalog GPU.", "",
       "| run | model | seq | mb | gb | recompute | measured s | predicted s | error | measured GiB | predicted GiB | error | MFU measured | MFU predicted |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    out.append(f"| {r['id']} | {r['model']} | {r['seq']} | {r['mb']} | {r['gb']} | {r['rc']} | {r['tm']:.4f} | {r['tp']:.4f} | "
               f"{100 * r['te']:+.1f}% | {r['mm']:.2f} | {r['mp']:.2f} | {100 * r['me']:+.1f}% | {100 * r['mfu_m']:.1f}% | {100 * r['mfu_p']:.1f}% |")
if rows:
    te = [abs(r["te"]) for r in rows]
    me = [abs(r["me"]) for r in rows]
    out += ["", f"Iteration time: mean |error| {100 * statistics.mean(te):.1f}%, max {100 * max(te):.1f}%, "
            f"{sum(e <= 0.05 for e in te)} of {len(te)} within 5%.",
            f"Peak memory: mean |error| {100 * statistics.mean(me):.1f}%, max {100 * max(me):.1f}%, {sum(e <= 0.05 for e in me)} of {len(me)} within 5%.",
            f"Runtime MFU: {100 * min(r['mfu_m'] for r in rows):.1f}% to {100 * max(r['mfu_m'] for r in rows):.1f}%."]
out += ["", "Where the time goes (measured / predicted, seconds per iteration; forward and backward as measured):", "",
        "| run | compute | optimizer | forward | backward |", "|---|---|---|---|---|"]
for r in rows:
    cells = [f"{r['parts'][k]['measured']:.4f} / {r['parts'][k]['predicted']:.4f}" if k in r["parts"] else "n/a" for k in ("compute_s", "optimizer_s")]
    out.append(f"| {r['id']} | {cells[0]} | {cells[1]} | {r['split'].get('forward_s', 0):.4f} | {r['split'].get('backward_s', 0):.4f} |")
out += ["", "## Provenance", ""]
if rows:
    out += [f"- runtime: trainsim {rows[0]['context'].get('tool_version', '?')} at {rows[0]['context'].get('git_revision', '?')}, "
            f"host {rows[0]['context'].get('host', '?')}, first run {rows[0]['context'].get('time_utc', '?')}"]
out += ["- calibration (profile.json provenance):"] + [f"  - {k}: {v}" for k, v in prof.items() if not isinstance(v, (dict, list))]
out += ["- measurements: runs/ (trainsim.measurement), predictions: predicted/, comparisons: compared/, charts: report.html",
        "- plans: bench/gpu_validation/runs.txt, models: bench/gpu_validation/models/"]
open(os.path.join(dest, "README.md"), "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
# Charts of the same files: the profile's curves, then each plan predicted vs measured.
compared=("$dest"/compared/*.json)
if [ -e "${compared[0]}" ]; then
  "$trainsim" report "$dest/profile.json" "${compared[@]}" --title "trainsim on $gpu: measured vs predicted" --out "$dest/report.html"
fi
