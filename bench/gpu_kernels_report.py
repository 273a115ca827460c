#!/usr/bin/env python3
"""Markdown tables of what bench/gpu_kernels.py measured (its kernels.jsonl), beside what trainsim's
datasheet model prices for the same GEMM shapes where it applies (the formula of sim/cost_model.cpp
DatasheetCostModel::gemm_at with the shipped constants for the H100/H200 in BF16: 707.5 TFLOP/s =
989 x gemm_peak_fraction 0.774 x the MAMF ratio 0.924; 1.2 us per wave of 128 x 128 tiles on 132
SMs; 4.5 us per kernel; the roofline at 4.8 TB/s x memory_bandwidth_fraction 0.503).
Usage: bench/gpu_kernels_report.py kernels.jsonl > KERNELS.md
"""
import json
import math
import sys

from gemm_shape_fit import SHIPPED_RATE  # the simulator's H100/H200 GEMM rates, with their sources

BF16_RATE = SHIPPED_RATE["bf16"]


def model_grouped_s(m, n, k, batch, rate=BF16_RATE, sms=132, wave_s=1.2e-6, kernel_s=4.5e-6, bandwidth=4.8e12 * 0.503):
    tiles = math.ceil(m / 128) * math.ceil(n / 128) * batch
    waves = math.ceil(tiles / sms)
    compute = 2.0 * m * n * k * batch / (rate * tiles / (waves * sms)) + waves * wave_s * min(1, m / 128) * min(1, n / 128)
    memory = (m * k + k * n + m * n) * 2.0 * batch / bandwidth
    return max(compute, memory) + kernel_s


def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    device = next((r for r in rows if r["table"] == "device"), {})
    print(f"Device: {device.get('name')} ({device.get('sms')} SMs), PyTorch {device.get('torch')}, CUDA "
          f"{device.get('cuda')}, cuDNN {device.get('cudnn')}. Errors recorded: "
          f"{sum(1 for r in rows if 'error' in r)} ({', '.join(sorted({r.get('case', r.get('backend', '')) + ' ' + str(r.get('head_dim', '')) for r in rows if 'error' in r}))}).\n")

    print("## GEMMs: BF16 and FP8 by scaling recipe (TFLOP/s; m tokens x n out x k in)\n")
    print("| m | n | k | BF16 | FP8 per-tensor, fast accum | per-tensor | row-wise | 1x128 / 128x128 blocks | blocks vs BF16 | per-tensor / blocks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    gemm = {}
    for r in rows:
        if r["table"] == "gemm" and "error" not in r:
            gemm.setdefault((r["m"], r["n"], r["k"]), {})[r["case"]] = r["tflops"]
    for (m, n, k), c in gemm.items():
        b, bw, tw = c.get("bf16"), c.get("fp8_blockwise_1x128_128x128"), c.get("fp8_tensorwise")
        print(f"| {m} | {n} | {k} | {b:.0f} | {c.get('fp8_tensorwise_fast_accum', 0):.0f} | {tw:.0f} | "
              f"{c.get('fp8_rowwise', 0):.0f} | {bw:.0f} | {bw / b:.2f} | {tw / bw:.2f} |")

    print("\n## MoE grouped GEMMs (torch._grouped_mm, BF16), against trainsim's batched-GEMM price\n")
    print("fc1: tokens x hidden -> 2 x ffn (gate and up); fc2: tokens x ffn -> hidden; `experts` local "
          "experts with `T` tokens each. dense / grouped: one GEMM of all the tokens over the grouped kernel's time "
          "(< 1: the grouped kernel is slower). model / measured: trainsim's price of the grouped GEMM "
          "(a batched GEMM of `experts` x T rows) over the measured time.\n")
    print("| model | experts | T | linear | TFLOP/s fwd | bwd (dgrad + wgrad) | dense / grouped time | one GEMM per expert / grouped | model / measured fwd | FP8 row-wise fwd |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    fp8 = {(r["model"], r["tokens_per_expert"]): r for r in rows if r["table"] == "grouped_gemm" and r["case"].startswith("fc1_fp8")}
    for r in rows:
        if r["table"] != "grouped_gemm" or not r["case"].endswith("bf16") or "error" in r:
            continue
        h, f, g, t = r["hidden"], r["ffn"], r["experts"], r["tokens_per_expert"]
        n, k = (2 * f, h) if r["case"].startswith("fc1") else (h, f)
        model = model_grouped_s(t, n, k, g) * 1e3 / r["ms"]
        q = fp8.get((r["model"], t), {}) if r["case"].startswith("fc1") else {}
        q_txt = f"{q['tflops']:.0f}" if "tflops" in q else ""
        print(f"| {r['model']} | {g} | {t} | {r['case'][:3]} | {r['tflops']:.0f} | {r['bwd_tflops']:.0f} | "
              f"{r['vs_dense']:.2f} | {r['loop_of_gemms_ms'] / r['ms']:.2f} | {model:.2f} | {q_txt} |")

    print("\n## Fused attention, causal (TFLOP/s; forward + backward as 3.5 / (1/fwd + 2.5/bwd))\n")
    print("| backend | batch x heads | seq | head dim (q.k / v) | fwd | bwd | fwd + bwd |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["table"] != "attention":
            continue
        if "error" in r:
            print(f"| {r['backend']} | {r['batch']} x {r['heads']} | {r['seq']} | {r['head_dim']} / {r['v_head_dim']} | "
                  f"not run: {r['error'][:60]} | | |")
            continue
        both = 3.5 / (1 / r["fwd_tflops"] + 2.5 / r["bwd_tflops"])
        print(f"| {r['backend']} | {r['batch']} x {r['heads']} | {r['seq']} | {r['head_dim']} / {r['v_head_dim']} | "
              f"{r['fwd_tflops']:.0f} | {r['bwd_tflops']:.0f} | {both:.0f} |")

    gptoss = [r for r in rows if r["table"] == "gptoss"]
    if gptoss:
        print("\n## GPT-OSS's eager code around its kernels, as Megatron-Core runs it (docs/cost-model.md)\n")
        print("Bytes a device copy moves in the measured time, per byte of the tensor the model prices against, "
              "beside the model's figure.\n")
        print("| case | forward | model | backward | model | notes |")
        print("|---|---|---|---|---|---|")
        model = {"clamped_glu": (8, 15), "yarn_rope_unfused": (10, 17)}
        for r in gptoss:
            if "error" in r:
                print(f"| {r['case']} | not run: {r['error'][:60]} | | | | |")
            elif r["case"] in model:
                f, b = model[r["case"]]
                note = f"copy {r['copy_gb_per_s']:.0f} GB/s" + ("" if r.get("compiled", True) else "; activation not compiled")
                print(f"| {r['case']} | {r['copy_equivalent_fwd']:.1f} | {f} | {r['copy_equivalent_bwd']:.1f} | {b} | {note} |")
            else:
                print(f"| {r['case']} | host {r['host_ms']:.2f} ms with {r['queued_ms']:.1f} ms queued | waits: "
                      f"{'yes' if r['waits_for_device'] else 'no'} (model: yes) | | | |")


if __name__ == "__main__":
    main()
