#!/usr/bin/env python3
"""`calibrate trace` -> `predict --profile` on the public Qwen1.5-0.5B forward trace (H100): the
prediction's forward GEMM time and fused-attention time must each reproduce the trace's within 5%. That tests the reader's
kernel -> op -> shape links and the profile's GEMM lookup, not the model's accuracy.

The trace's figure is computed here from the raw JSON, independently of trainsim: the GPU time of
the bf16 GEMM kernels whose launch (correlation) carries the External id of an aten::mm / addmm
with Input Dims, i.e. the transformer layers' GEMMs of the one forward pass whose CPU side was
recorded. Batch and sequence come from the input ids' shape (aten::embedding's second input), and
M of every GEMM must equal their product. The traced forward has no LM-head GEMM (no GEMM with
N = vocab), so the prediction's gemm_lm_head is left out of the sum; backward GEMMs were not
measured and must be listed as priced from the nearest measured shape, as must the categories the
trace does not measure (the attention backward, memory-bound kernels). The trace's attention time
is that of its flash kernels launched by an aten::_flash_attention_forward with Input Dims.

Usage: check_trace_calibration.py TRAINSIM TRACE WORKDIR. Exit 0 within 5%, 1 otherwise, 77
(skipped) when the trace is absent; prints both figures."""
import gzip
import json
import os
import subprocess
import sys

GEMM_OPS = ("aten::mm", "aten::addmm")


def is_gemm_kernel(name):
    n = name.lower()
    if "flash" in n or "fmha" in n:
        return False
    return "gemm" in n or "xmma" in n or "cutlass" in n


def trace_figures(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        events = json.load(f)["traceEvents"]
    ops = {}
    launches = {}
    tokens = None
    for e in events:
        args = e.get("args", {})
        if e.get("cat") == "cpu_op" and "External id" in args:
            ops[args["External id"]] = e
            if e["name"] == "aten::embedding" and tokens is None:
                tokens = args["Input Dims"][1]  # [batch, seq]
        elif e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            launches[args["correlation"]] = args.get("External id")
    gemm_us, kernels, ms, ns = 0.0, 0, set(), set()
    attention_us, attention_kernels = 0.0, 0
    for e in events:
        if e.get("cat") == "kernel" and "flash" in e["name"]:
            op = ops.get(launches.get(e["args"].get("correlation")))
            if op is not None and op["name"] == "aten::_flash_attention_forward" and op["args"].get("Input Dims"):
                attention_us += e["dur"]
                attention_kernels += 1
            continue
        if e.get("cat") != "kernel" or not is_gemm_kernel(e["name"]):
            continue
        op = ops.get(launches.get(e["args"].get("correlation")))
        if op is None or op["name"] not in GEMM_OPS:
            continue
        dims = op["args"]["Input Dims"]
        a = dims[1] if op["name"] == "aten::addmm" else dims[0]
        if op["args"]["Input type"][1 if op["name"] == "aten::addmm" else 0] != "c10::BFloat16":
            continue
        gemm_us += e["dur"]
        kernels += 1
        ms.add(a[0])
        ns.add((dims[2] if op["name"] == "aten::addmm" else dims[1])[1])
    return gemm_us * 1e-6, kernels, tokens, ms, ns, attention_us * 1e-6, attention_kernels


def main():
    trainsim, trace, work = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.path.exists(trace):
        print(f"{trace}: not here (the public traces live in ../shared/traces); skipped")
        return 77
    os.makedirs(work, exist_ok=True)
    trace_s, kernels, tokens, ms, ns, attention_s, attention_kernels = trace_figures(trace)
    batch, seq = tokens
    if ms != {batch * seq}:
        print(f"FAIL: GEMM M values {sorted(ms)} are not batch x seq = {batch} x {seq}")
        return 1
    if 151936 in ns:  # Qwen1.5's vocab: an LM-head GEMM would belong in the sum
        print("FAIL: the trace has an LM-head GEMM; add gemm_lm_head to the predicted sum")
        return 1
    profile = os.path.join(work, "qwen-h100-profile.json")
    out = subprocess.run([trainsim, "calibrate", "trace", trace, "--out", profile], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        return 1
    predict = [trainsim, "predict", "--model", "qwen1.5-0.5b", "--gpu", "h100-sxm-80gb", "--profile", profile,
               "--gpus", "1", "--micro-batch", str(batch), "--seq-len", str(seq)]
    out = subprocess.run(predict + ["--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        return 1
    doc = json.loads(out.stdout)
    forward = doc["op_categories"][0]["forward_s"]
    predicted_s = sum(forward[c] for c in ("gemm_qkv", "gemm_proj", "gemm_fc1", "gemm_fc2"))
    listed = doc["inputs"]["extrapolated"]
    print(f"trace: {kernels} bf16 GEMM kernels tied to aten::mm/addmm, batch {batch} x seq {seq}: {trace_s * 1e3:.3f} ms")
    print(f"predict --profile: forward gemm_qkv + gemm_proj + gemm_fc1 + gemm_fc2 = {predicted_s * 1e3:.3f} ms")
    err = predicted_s / trace_s - 1
    print(f"difference: {err * 100:+.2f}% (limit 5%)")
    ok = abs(err) <= 0.05
    predicted_attention_s = forward["attention_fused"]
    print(f"trace: {attention_kernels} flash kernels of aten::_flash_attention_forward: {attention_s * 1e3:.3f} ms")
    print(f"predict --profile: forward attention_fused = {predicted_attention_s * 1e3:.3f} ms")
    attention_err = predicted_attention_s / attention_s - 1
    print(f"difference: {attention_err * 100:+.2f}% (limit 5%)")
    ok = ok and abs(attention_err) <= 0.05
    for needle in (f"seq {seq} backward is outside the measured attention table", "memory-bound kernels: not measured",
                   f"x1024x{batch * seq} was not measured"):
        if not any(needle in line for line in listed):
            print(f"FAIL: predict does not list '{needle}' among inputs.extrapolated: {listed}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
