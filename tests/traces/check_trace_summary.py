#!/usr/bin/env python3
"""Checks `trainsim trace --format json FILE` against an independent count from the raw trace JSON:
the number of GPU kernels (cat kernel / Kernel) exactly, the number of memcpy / memset events (cat
gpu_memcpy / Memcpy, gpu_memset / Memset) exactly, and the GPU busy time (the union of the intervals
of kernels, memcpys and memsets over all streams) within 0.1%. Exit 0 when all agree, 1 otherwise,
77 (skipped) when the trace file is absent; prints both sides' figures."""
import gzip
import json
import os
import subprocess
import sys


def raw_figures(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel")]
    memcpys = [e for e in events if e.get("cat") in ("gpu_memcpy", "Memcpy")]
    memsets = [e for e in events if e.get("cat") in ("gpu_memset", "Memset")]
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels + memcpys + memsets)
    busy, cur_start, cur_end = 0.0, None, None
    for s, e in spans:
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                busy += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        busy += cur_end - cur_start
    return len(kernels), len(memcpys), len(memsets), busy * 1e-6


def main():
    trainsim, trace = sys.argv[1], sys.argv[2]
    if not os.path.exists(trace):
        print(f"{trace}: not here (the public traces live in ../shared/traces); skipped")
        return 77
    out = subprocess.run([trainsim, "trace", "--format", "json", trace], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        return 1
    doc = json.loads(out.stdout)
    assert doc["schema"] == "trainsim.trace_summary", doc["schema"]
    got = doc["traces"][0]
    count, memcpys, memsets, busy = raw_figures(trace)
    cats = got["categories"]
    got_memcpys = cats.get("memcpy", {}).get("memory_ops", 0)
    got_memsets = cats.get("memset", {}).get("memory_ops", 0)
    print(f"{trace}: kernels trainsim {got['kernels_total']} / raw {count}; "
          f"memcpy {got_memcpys} / {memcpys}, memset {got_memsets} / {memsets}; "
          f"GPU busy trainsim {got['gpu_busy_s']:.6f} s / raw {busy:.6f} s")
    ok = got["kernels_total"] == count and abs(got["gpu_busy_s"] - busy) <= 1e-3 * busy
    ok = ok and got_memcpys == memcpys and got_memsets == memsets
    step_kernels = sum(s["kernels"] for s in got["steps"])
    if step_kernels > count:
        print(f"steps hold {step_kernels} kernels, more than the trace's {count}")
        ok = False
    cat_kernels = sum(c["kernels"] for c in got["categories"].values())
    if cat_kernels != count:
        print(f"categories hold {cat_kernels} kernels, not the trace's {count}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
