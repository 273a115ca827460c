#!/usr/bin/env python3
"""Host time of one eager PyTorch op and one autograd node, read from real profiler traces.

In: two traces in ../shared/traces (their README gives the sources):
  - h100-qwen1.5-0.5b-forward.json.gz: an eager forward on an H100 host (PyTorch profiler);
  - a100-16rank-recsys-rank0.json.gz: a training step (forward and autograd backward) on an
    A100-SXM4-80GB host.
Out: the median CPU span of the forward elementwise ops (aten::mul, aten::add) and of the autograd
nodes (autograd::engine::evaluate_function: MulBackward0, the node with the most samples whose
backward launches kernels) -- the figures sim/step_cost.cpp prices a Python loop of eager ops with
(kEagerOpHostS, kAutogradNodeHostS: Megatron-Core's per-expert bias loop, plan/moe_lowering.cpp).
The spans are measured under the profiler, which adds a little to each; the Python interpreter's
time between ops is not in them. Prints only; asserts nothing (timing never decides pass/fail).
--check exits 77 when a trace is absent (ctest skips), 1 when an op is missing from a trace.
"""
import argparse
import collections
import gzip
import json
import os
import statistics
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TRACES = os.path.join(ROOT, "..", "shared", "traces")
FORWARD = ("h100-qwen1.5-0.5b-forward.json.gz", ["aten::mul", "aten::add"])
BACKWARD = ("a100-16rank-recsys-rank0.json.gz", ["autograd::engine::evaluate_function: MulBackward0"])


def spans(path):
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    by_name = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator"):
            by_name[e["name"]].append(float(e["dur"]))
    return by_name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 77 when a trace is absent")
    ap.add_argument("--traces", default=TRACES, help="the folder holding the traces (default ../shared/traces)")
    args = ap.parse_args()
    rows = []
    for file, names in (FORWARD, BACKWARD):
        path = os.path.join(args.traces, file)
        if not os.path.exists(path):
            print(f"eager_host_check: {path} is absent", file=sys.stderr)
            return 77 if args.check else 2
        by_name = spans(path)
        medians = []
        for name in names:
            if not by_name.get(name):
                print(f"eager_host_check: {file} has no '{name}' spans", file=sys.stderr)
                return 1
            m = statistics.median(by_name[name])
            medians.append(m)
            rows.append((file, name, len(by_name[name]), m))
        rows.append((file, "mean of the medians above", 0, statistics.mean(medians)))
    print("| trace | CPU op | spans | median us |")
    print("|---|---|---|---|")
    for file, name, n, m in rows:
        print(f"| {file} | {name} | {n if n else ''} | {m:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
