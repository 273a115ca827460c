#!/usr/bin/env python3
"""Per-phase check of the MoE cost model against DeepSeek-V3's H800 profiler trace.

In: the trace (deepseek-ai/profile-data train.json: one DualPipe forward chunk and one backward
chunk of 4 MoE layers each, EP64, TP1, sequence 4096, FP8, balanced routing) and a built trainsim.
Out: a Markdown table, per phase (attention / expert MLP / FP8 casts / dispatch / combine) and pass
(F, B+W), of the kernel time the trace measured beside what `trainsim predict` prices for the same
4 layers on the h800-sxm-80gb (docs/validation.md "Per-op check: DeepSeek-V3 MoE layers on H800").
It builds nothing and asserts no accuracy: timing never decides pass/fail. --check (ctest) exits 1
only when a step fails or the prediction is not on the H800 entry; exit 77 when the trace is absent.

Measured: the phases are CPU record_function ranges (attn(F), mlp(B), ...); each kernel belongs to
the range that holds its launch (Kineto's correlation id links kernel and launch; launches from the
autograd thread count by time, as the main thread waits inside the range), and a phase's figure is
the SUM of its kernels' durations (stream 7, the second wgrad stream 23 and DeepEP's stream 27) --
not the range's CPU span and not its wall time on the GPU, which the overlapped chunk stretches.
`trainsim trace --format json` gives the device, kernel count, GPU busy time and the CPU ranges;
the per-phase attribution is done here from the raw JSON (trace does not tie kernels to CPU ranges).

Predicted: the built-in deepseek-v3 model (multi-head latent attention) with 4 and with 8 MoE layers, predicted the same way;
their difference per op category is exactly 4 layers' ops (no embedding, LM head, final norm, loss).
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TRACE = os.path.join(ROOT, "..", "shared", "traces", "deepseek-v3-h800-train-step.json.gz")
LAYERS = 4
GPU = "h800-sxm-80gb"
# DeepSeek-V3's pretraining layout for one micro-batch of one sequence (4096 tokens: DeepEP's
# docs/legacy.md, "the DeepSeek-V3/R1 pretraining setting (4096 tokens per batch ...)"): EP64 over
# 64 GPUs, TP1, no PP (the trace leaves PP communication out), FP8 GEMMs, DeepEP's dispatcher.
# DeepSeek recomputes MLA's up projections in the backward (DeepSeek-V3 report, arXiv 2412.19437
# section 3.2.3, "Recomputation of RMSNorm and MLA Up-Projection"): Megatron-Core's mla_up_proj module.
# Its FP8 is fine-grained, 1x128 activation and 128x128 weight tiles (section 3.3.2): Transformer
# Engine's blockwise recipe, --fp8-recipe blockwise.
PREDICT_FLAGS = ["--cluster", "deepseek-h800", "--gpus", "64", "--ep", "64", "--tp", "1", "--pp", "1",
                 "--micro-batch", "1", "--seq-len", "4096", "--precision", "fp8",
                 "--fp8-recipe", "blockwise", "--moe-dispatcher", "flex", "--recompute", "selective", "--recompute-modules", "mla_up_proj"]

# Phase -> trainsim op categories (common/op_category.hpp). DeepSeek's attn phase runs the
# pre-attention and pre-MLP norms, the attention block and the MoE gate (top-k): it ends where the
# dispatch starts. ep_comm holds dispatch and combine, priced alike (same bytes each way): half each.
CATEGORIES = {
    "attention": ["gemm_qkv", "gemm_proj", "attention_fused", "attention_gemm", "softmax", "norm", "rotary",
                  "residual_bias", "moe_router"],
    "expert MLP": ["gemm_fc1", "gemm_fc2", "activation", "moe_permute"],
    "FP8 casts": ["fp8_cast"],
}
LEFT_OUT = ["embedding", "gemm_lm_head", "cross_entropy", "optimizer", "tp_comm", "other"]
PHASES = [("attention", "attn"), ("expert MLP", "mlp"), ("FP8 casts", None), ("dispatch", "dispatch"),
          ("combine", "combine")]


def kernel_class(name):
    """cast (a standalone FP8 quantize / dequantize / transpose; SwiGLU fused with its cast stays in
    its phase), gemm, flash (attention), norm, rotary or other: to line kernels up with categories."""
    n = name.lower()
    if "swiglu" not in n and ("cast" in n or "transpose" in n):
        return "cast"
    if "dpsk::ep::internode::dispatch<" in name or "dpsk::ep::internode::combine<" in name:
        return "ep_data"  # DeepEP's token-moving kernels; its notify and layout kernels stay "other"
    for cls, keys in (("gemm", ("gemm",)), ("flash", ("flash",)), ("norm", ("layer_norm", "rmsnorm")), ("rotary", ("rotary",))):
        if any(key in n for key in keys):
            return cls
    return "other"


def measured_phases(path):
    """{(phase, pass, kernel class): seconds}, the kernel time launched outside every range, the count."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        events = json.load(f)["traceEvents"]
    launch_ts = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launch_ts[e["args"]["correlation"]] = e["ts"]
    ranges = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                    if e.get("cat") == "user_annotation" and e["name"].endswith(("(F)", "(B)", "(W)")))
    sums, spans, outside, count = {}, {}, 0.0, 0
    for k in (e for e in events if e.get("cat") in ("kernel", "Kernel")):
        count += 1
        t = launch_ts.get(k["args"].get("correlation"))
        owner = next((name for start, end, name in ranges if t is not None and start <= t < end), None)
        if owner is None:
            outside += k["dur"]
            continue
        key = (owner[:-3], owner[-2], kernel_class(k["name"]))
        sums[key] = sums.get(key, 0.0) + k["dur"] * 1e-6
        spans.setdefault(owner, []).append((k["ts"], k["ts"] + k["dur"]))
    return sums, {name: (len(iv), union_s(iv)) for name, iv in spans.items()}, outside * 1e-6, count


def union_s(intervals):
    """Seconds covered by the union of (start, end) microsecond intervals (overlapping streams once)."""
    total, start, end = 0.0, None, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += 0.0 if end is None else end - start
            start, end = s, e
        else:
            end = max(end, e)
    return (total + (0.0 if end is None else end - start)) * 1e-6


def run_json(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"error: cannot run {cmd[0]}: {e}\nhint: build trainsim first, or pass --trainsim PATH")
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} exited {out.returncode}:\n{out.stderr}")
    return json.loads(out.stdout)


def predicted_layers(trainsim, workdir):
    """Per op category, forward and backward seconds of LAYERS layers for one micro-batch, the FP8
    weight casts apart (priced once per iteration: the forward fp8_cast of one micro-batch less the
    second micro-batch's), and the prediction's JSON."""
    with open(os.path.join(ROOT, "configs", "models.json")) as f:
        models = json.load(f)["models"]
    base = next(m for m in models if m["name"] == "deepseek-v3")
    cats = {}
    for layers in (LAYERS, 2 * LAYERS):
        # The trace's layers are MoE layers: none of the model's dense first layers.
        model = dict(base, name=f"deepseek-v3-{layers}-layers", layers=layers, moe=dict(base["moe"], dense_layers=0))
        path = os.path.join(workdir, f"model-{layers}.json")
        with open(path, "w") as f:
            json.dump(model, f)
        for global_batch in (64, 128):  # one and two micro-batches of one sequence per rank
            doc = run_json([trainsim, "predict", "--model", path, *PREDICT_FLAGS, "--global-batch", str(global_batch),
                            "--format", "json"])
            cats[(layers, global_batch)] = doc["op_categories"][0]
            if (layers, global_batch) == (LAYERS, 64):
                first = doc

    def layer_ops(global_batch):
        few, many = cats[(LAYERS, global_batch)], cats[(2 * LAYERS, global_batch)]
        return {p: {c: many[p][c] - few[p][c] for c in many[p]} for p in ("forward_s", "backward_s")}

    one, two = layer_ops(64), layer_ops(128)
    cast_per_micro_batch = two["forward_s"]["fp8_cast"] - one["forward_s"]["fp8_cast"]
    weight_cast_s = one["forward_s"]["fp8_cast"] - cast_per_micro_batch
    one["forward_s"]["fp8_cast"] = cast_per_micro_batch
    return one, weight_cast_s, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trainsim", default=os.path.join(ROOT, "build", "trainsim"))
    ap.add_argument("--trace", default=TRACE)
    ap.add_argument("--check", action="store_true", help="ctest: fail only on a failed step or a GPU other than the H800")
    a = ap.parse_args()
    if not os.path.exists(a.trace):
        print(f"{a.trace}: not here (the public traces live in ../shared/traces); skipped")
        return 77

    summary = run_json([a.trainsim, "trace", "--format", "json", a.trace])["traces"][0]
    sums, per_range, outside, count = measured_phases(a.trace)
    with tempfile.TemporaryDirectory() as work:
        pred, weight_cast_s, doc = predicted_layers(a.trainsim, work)
    gpu = doc["inputs"]["hardware"]["gpu"]

    def measured(phases, passes, classes=None):
        return sum(v for (ph, pas, cls), v in sums.items()
                   if ph in phases and pas in passes and (classes is None or cls in classes))

    def predicted(categories, passes):
        return sum(pred[p][c] for p in passes for c in categories)

    compute = ("attention", "expert MLP", "FP8 casts")
    not_cast = ("gemm", "flash", "norm", "rotary", "ep_data", "other")
    rows = []  # (phase, pass, measured, W part, predicted)
    for phase in compute + ("dispatch", "combine"):
        for fwd in (True, False):
            passes, ppass = (("F",), ("forward_s",)) if fwd else (("B", "W"), ("backward_s",))
            if phase == "FP8 casts":
                m, w = measured(("attn", "mlp", "dispatch", "combine"), passes, ("cast",)), measured(("attn", "mlp"), ("W",), ("cast",))
                p = predicted(CATEGORIES[phase], ppass)
            elif phase in CATEGORIES:
                tag = "attn" if phase == "attention" else "mlp"
                m, w = measured((tag,), passes, not_cast), measured((tag,), ("W",), not_cast)
                p = predicted(CATEGORIES[phase], ppass)
            else:
                m, w = measured((phase,), passes, not_cast), 0.0
                p = predicted(("ep_comm",), ppass) / 2
            rows.append((phase, "F" if fwd else ("B" if phase in ("dispatch", "combine") else "B+W"), m, w, p))

    print(f"trace: {summary['device']['name']}, {summary['kernels_total']} kernels, GPU busy "
          f"{summary['gpu_busy_s'] * 1e3:.1f} ms (comm {summary['comm_s'] * 1e3:.1f}, exposed "
          f"{summary['exposed_comm_s'] * 1e3:.1f}), step wall {summary['steps'][0]['wall_s'] * 1e3:.1f} ms")
    print(f"predicted on: {gpu['name']} ({gpu['display_name']}), cluster {doc['inputs']['hardware']['cluster']}; "
          f"deepseek-v3, {LAYERS} layers (8-layer minus 4-layer prediction), one micro-batch; "
          f"{' '.join(PREDICT_FLAGS)} --global-batch 64 (128: the weight casts apart)")
    print()
    print("| phase | pass | measured ms (kernel sum; W part) | predicted ms | predicted / measured |")
    print("|---|---|---:|---:|---:|")
    for phase, label, m, w, p in rows:
        w_text = f" ({w * 1e3:.2f})" if label == "B+W" else ""
        print(f"| {phase} | {label} | {m * 1e3:.2f}{w_text} | {p * 1e3:.2f} | {p / m:.2f} |")
    for name, phases in (("compute (attention + MLP + casts)", compute), ("dispatch + combine", ("dispatch", "combine"))):
        for label in ("F", "B+W"):
            m = sum(r[2] for r in rows if r[0] in phases and (r[1] == "F") == (label == "F"))
            p = sum(r[4] for r in rows if r[0] in phases and (r[1] == "F") == (label == "F"))
            print(f"| **{name}** | {label} | {m * 1e3:.2f} | {p * 1e3:.2f} | {p / m:.2f} |")
    print()
    print("| range (4 of each) | kernels | kernel sum ms | GPU busy ms (union) | CPU span ms |")
    print("|---|---:|---:|---:|---:|")
    cpu = summary["cpu_annotations"]
    for name in sorted(per_range, key=lambda n: ("FBW".index(n[-2]), n)):
        kernels, busy = per_range[name]
        total = measured((name[:-3],), (name[-2],))
        print(f"| {name} | {kernels} | {total * 1e3:.2f} | {busy * 1e3:.2f} | {cpu[name]['time_s'] * 1e3:.2f} |")
    print()
    # The host time per op of sim/step_cost.cpp (kTransformerEngineHostPerOpS): what the CPU spends
    # issuing these layers -- every range's CPU span but dispatch(F)'s, which is the host waiting
    # on DeepEP's receive counts -- over the ops trainsim lowers the same layers to.
    per_layer = doc["host"]["ops_per_layer"]
    ops = LAYERS * (per_layer["forward"] + per_layer["backward"] + per_layer["recompute"])
    issuing = [n for n in per_range if n != "dispatch(F)"]
    cpu_issue = sum(cpu[n]["time_s"] for n in issuing)
    print(f"Host: CPU spans of {', '.join(sorted(issuing))}: {cpu_issue * 1e3:.2f} ms for {LAYERS} layers of "
          f"{per_layer['forward']} + {per_layer['backward']} + {per_layer['recompute']} ops (forward, backward, "
          f"recomputed): {cpu_issue / ops * 1e6:.1f} us per op")
    print()
    print(f"FP8 weight casts, priced once per iteration (not in the rows above): {weight_cast_s * 1e3:.2f} ms predicted")

    print()
    print("| kernels (trace) | op categories (trainsim) | pass | measured ms | predicted ms | predicted / measured |")
    print("|---|---|---|---:|---:|---:|")
    detail = [
        ("GEMMs of the attn phase", ("attn",), ("gemm",), ("gemm_qkv", "gemm_proj", "moe_router")),
        ("flash attention", ("attn",), ("flash",), ("attention_fused",)),
        ("GEMMs of the mlp phase (routed + shared experts)", ("mlp",), ("gemm",), ("gemm_fc1", "gemm_fc2")),
        ("layer_norm (RMSNorm)", ("attn", "mlp"), ("norm",), ("norm",)),
        ("rotary", ("attn",), ("rotary",), ("rotary",)),
    ]
    detail += [("DeepEP data kernels of the dispatch range", ("dispatch",), ("ep_data",), ("ep_comm",)),
               ("DeepEP data kernels of the combine range", ("combine",), ("ep_data",), ("ep_comm",))]
    for name, phases, classes, categories in detail:
        for label, passes, ppass in (("F", ("F",), ("forward_s",)), ("B+W", ("B", "W"), ("backward_s",))):
            m, p = measured(phases, passes, classes), predicted(categories, ppass)
            shown = ", ".join(categories)
            if categories == ("ep_comm",):
                label, p, shown = ("F" if label == "F" else "B"), p / 2, "ep_comm / 2"
            print(f"| {name} | {shown} | {label} | {m * 1e3:.2f} | {p * 1e3:.2f} | "
                  f"{p / m if m > 0 else float('nan'):.2f} |")
    print()
    left = {c: (pred["forward_s"][c] + pred["backward_s"][c]) * 1e3 for c in LEFT_OUT}
    print("predicted categories left out (4 layers, ms): " + ", ".join(f"{c} {v:.2f}" for c, v in left.items()))
    print(f"kernel time launched outside every phase range: {outside * 1e3:.2f} ms ({count} kernels in the trace)")

    if a.check:
        ok = gpu["name"] == GPU and "H800" in summary["device"]["name"]
        ok = ok and all(measured((ph,), ("F",)) > 0 for ph in ("attn", "mlp", "dispatch", "combine"))
        if not ok:
            print(f"check failed: predicted on {gpu['name']} (want {GPU}), trace device {summary['device']['name']}, "
                  f"ranges with kernels: {sorted({k[:2] for k in sums})}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
