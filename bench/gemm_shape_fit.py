#!/usr/bin/env python3
"""The GEMM kernel's fixed costs of the datasheet model, fitted on measured GEMM tables.

trainsim prices a GEMM as  max(flops / (rate x wave efficiency) + waves x gemm_wave_s, bytes / bandwidth)
+ gemm_kernel_s  (sim/cost_model.cpp, 128 x 128 output tiles, one tile per SM per wave). This script
fits gemm_wave_s, gemm_kernel_s and the rate on the measured per-shape GEMM tables of
shared/reference/microbench.json (XLA's H100 and B200 tables: CUPTI kernel times over an
m x n x k grid of 256-4096) and prints the fit beside the model without the two costs, so the
shipped values (sim/cost_model.hpp EfficiencyConstants) can be checked. Only shapes with m, n >=
1024 enter: below that cuBLAS picks smaller tiles and split-K, which the tile model does not have.
The rate is the table's own; the simulator's rate is the fitted gemm_peak_fraction (docs/validation.md).

With --profile PROFILE.json it reads the GEMM tables a `trainsim calibrate gpu` measured instead
(one per dtype; the H200 of reports/measured/2026-11-28-h200-sxm-141gb/profile.json) and also prints
the shipped model's error on them: the H100/H200 rate the simulator uses (989 x 0.774 x the MAMF
ratio over the A100's: 707.5 TFLOP/s BF16, 1294 FP8), 1.2 us per wave, 4.5 us per kernel.

Usage: bench/gemm_shape_fit.py [path/to/microbench.json]
       bench/gemm_shape_fit.py --profile PROFILE.json [--sms 132] [--hbm-gb-per-s 4800]
"""
import argparse
import json
import math

TABLES = [  # (gpu prefix in the records, dtype in `what`, SMs, HBM bytes/s from the catalog)
    ("H100 (XLA", "BF16", 132, 3.35e12),
    ("B200 (sm_100", "BF16", 148, 8.0e12),
    ("H100 (XLA", "FP8", 132, 3.35e12),
]


def model_s(m, n, k, wave_s, kernel_s, sms, rate, bandwidth, bytes_per_value):
    tiles = math.ceil(m / 128) * math.ceil(n / 128)
    waves = math.ceil(tiles / sms)
    compute = 2.0 * m * n * k / (rate * tiles / (waves * sms)) + waves * wave_s
    memory = (m * k + k * n + m * n) * bytes_per_value / bandwidth
    return max(compute, memory) + kernel_s


def rms_log_error(points, wave_s, kernel_s, sms, rate, bandwidth, bpv):
    total = sum(math.log(model_s(m, n, k, wave_s, kernel_s, sms, rate, bandwidth, bpv) / t) ** 2 for m, n, k, t in points)
    return math.sqrt(total / len(points))


SHIPPED_RATE = {"bf16": 989e12 * 0.774 * (794.5 / 989.0) / (271.2 / 312.0),
                "fp8": 989e12 * 0.774 * (1453.4 / 989.0) / (271.2 / 312.0)}  # the H200's FP8 MAMF


def fit(points, sms, bandwidth, bpv):
    rates = [x * 1e12 for x in range(300, 3200, 10)]
    best = min((rms_log_error(points, w * 1e-7, f * 5e-7, sms, r, bandwidth, bpv), w * 1e-7, f * 5e-7, r)
               for w in range(0, 31) for f in range(0, 17) for r in rates)
    plain = min((rms_log_error(points, 0, 0, sms, r, bandwidth, bpv), r) for r in rates)
    return best, plain


def main_profile(path, sms, bandwidth):
    profile = json.load(open(path))
    device = profile.get("provenance", {}).get("device", "?")
    for table in profile["gemm"]:
        dtype = table["dtype"]
        points = [(q["m"], q["n"], q["k"], q["timing"]["median_s"]) for q in table["points"]
                  if q["m"] >= 1024 and q["n"] >= 1024]
        bpv = 1.0 if dtype == "fp8" else 2.0
        (err, wave_s, kernel_s, rate), plain = fit(points, sms, bandwidth, bpv)
        print(f"{device} {dtype}: {len(points)} shapes with m, n >= 1024; fitted gemm_wave_s {wave_s * 1e6:.1f} us, "
              f"gemm_kernel_s {kernel_s * 1e6:.1f} us, rate {rate / 1e12:.0f} TFLOP/s: rms log error {err:.3f} "
              f"(without the two costs {plain[0]:.3f} at {plain[1] / 1e12:.0f} TFLOP/s)")
        if dtype in SHIPPED_RATE:
            shipped = SHIPPED_RATE[dtype]
            ratios = sorted(model_s(m, n, k, 1.2e-6, 4.5e-6, sms, shipped, bandwidth * 0.503, bpv) / t for m, n, k, t in points)
            mean_log = sum(math.log(x) for x in ratios) / len(ratios)
            print(f"  shipped ({shipped / 1e12:.1f} TFLOP/s, 1.2 us, 4.5 us, HBM x 0.503): model / measured median "
                  f"{ratios[len(ratios) // 2]:.3f}, 10th-90th percentile {ratios[len(ratios) // 10]:.3f} .. "
                  f"{ratios[len(ratios) * 9 // 10]:.3f}, rms log error "
                  f"{rms_log_error(points, 1.2e-6, 4.5e-6, sms, shipped, bandwidth * 0.503, bpv):.3f} "
                  f"(mean log {mean_log:+.3f})")


def main():
    parser = argparse.ArgumentParser(description="GEMM fixed costs fitted on measured GEMM tables")
    parser.add_argument("microbench", nargs="?", default="../shared/reference/microbench.json")
    parser.add_argument("--profile", help="a trainsim calibrate gpu profile: fit on its GEMM tables instead")
    parser.add_argument("--sms", type=int, default=132, help="the profile's GPU's SMs (H100/H200: 132)")
    parser.add_argument("--hbm-gb-per-s", type=float, default=4800, help="its HBM bandwidth (H200: 4800)")
    args = parser.parse_args()
    if args.profile:
        return main_profile(args.profile, args.sms, args.hbm_gb_per_s * 1e9)
    path = args.microbench
    records = json.load(open(path))
    records = records["measurements"] if isinstance(records, dict) else records
    for prefix, dtype, sms, bandwidth in TABLES:
        points = [(r["config"]["m"], r["config"]["n"], r["config"]["k"], r["config"]["time_us"] * 1e-6)
                  for r in records
                  if r["topic"] == "gemm" and r["gpu"].startswith(prefix) and dtype in r["what"]
                  and r["config"]["m"] >= 1024 and r["config"]["n"] >= 1024]
        if not points:
            print(f"{prefix} {dtype}: no records in {path}")
            continue
        bpv = 1.0 if dtype == "FP8" else 2.0
        rates = [x * 1e12 for x in range(300, 3200, 10)]
        best = min((rms_log_error(points, w * 1e-7, f * 5e-7, sms, r, bandwidth, bpv), w * 1e-7, f * 5e-7, r)
                   for w in range(0, 31) for f in range(0, 17) for r in rates)
        plain = min((rms_log_error(points, 0, 0, sms, r, bandwidth, bpv), r) for r in rates)
        err, wave_s, kernel_s, rate = best
        print(f"{prefix}...) {dtype}: {len(points)} shapes; gemm_wave_s {wave_s * 1e6:.1f} us, gemm_kernel_s "
              f"{kernel_s * 1e6:.1f} us, rate {rate / 1e12:.0f} TFLOP/s: rms log error {err:.3f} "
              f"(without the two costs {plain[0]:.3f} at {plain[1] / 1e12:.0f} TFLOP/s)")
    print("note: the H100 FP8 table exceeds the FP8 peak at its largest shapes (flagged in its records); "
          "the shipped values come from the BF16 tables")


if __name__ == "__main__":
    main()
