#!/usr/bin/env python3
"""Times, on one GPU through PyTorch, the kernels trainsim prices from reference tables rather than
from its own calibration: MoE grouped GEMMs (torch._grouped_mm, forward and forward+backward, against
one dense GEMM of the same tokens and against one GEMM per expert), FP8 GEMMs under each scaling
recipe (per-tensor with and without fast accumulation, row-wise, 1x128 x 128x128 block-wise) against
BF16 at the same shape, FP8 grouped GEMMs (row-wise), and fused attention (PyTorch's FlashAttention-2
and cuDNN SDPA backends; causal; head dims 64, 128 and MLA's 192/128), forward and backward.

One JSON object per line goes to --out as each case finishes, so a run cut short keeps what it did.
Timing: CUDA events around each call after warm-up, median of the samples, inputs random (never
zeros). A case PyTorch cannot run here is recorded with its error, not skipped silently.
Usage (on the GPU machine): python3 bench/gpu_kernels.py --out kernels.jsonl [--tables gemm:60,grouped:50,attention:40]
"""
import argparse
import json
import math
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

DEV = "cuda"
BF16 = torch.bfloat16
E4M3 = torch.float8_e4m3fn
E4M3_MAX = 448.0


def median_ms(fn, warmup=3, samples=15, max_s=1.0):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    spent = 0.0
    for _ in range(samples):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms = start.elapsed_time(stop)
        times.append(ms)
        spent += ms / 1e3
        if len(times) >= 5 and spent > max_s:
            break
    return statistics.median(times), len(times), (max(times) - min(times)) / statistics.median(times)


class Recorder:
    def __init__(self, path):
        self.file = open(path, "w")
        self.start = time.time()
        self.table_end = self.start
        self.count = 0

    def begin(self, budget_s):  # each table gets its own slice of the time, so a slow one cannot starve the rest
        self.table_end = time.time() + budget_s

    def time_left(self):
        return time.time() < self.table_end

    def case(self, table, params, fn):
        """fn() returns a dict of measured fields; any exception is recorded as the case's error."""
        if not self.time_left():
            return None
        row = {"table": table, **params}
        try:
            row.update(fn())
        except Exception as e:  # recorded, not fatal: the next case still runs
            row["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]
        torch.cuda.empty_cache()
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()
        self.count += 1
        short = {k: v for k, v in row.items() if k in ("table", "case", "m", "n", "k", "tokens_per_expert", "experts",
                                                       "seq", "head_dim", "backend", "tflops", "fwd_tflops",
                                                       "bwd_tflops", "error")}
        print(json.dumps(short), flush=True)
        return row


def rnd(*shape, dtype=BF16, scale=1.0):
    return (torch.randn(*shape, device=DEV, dtype=torch.float32) * scale).to(dtype)


# ---------------------------------------------------------------- dense BF16 and FP8 GEMMs
def to_fp8_tensorwise(x):
    amax = x.abs().amax().float().clamp(min=1e-12)
    scale = E4M3_MAX / amax
    return (x.float() * scale).to(E4M3), (1.0 / scale).reshape(())


def to_fp8_rowwise(x):  # one scale per row of x (rows = the non-contracted dim)
    amax = x.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12)
    scale = E4M3_MAX / amax
    return (x.float() * scale).to(E4M3), (1.0 / scale)


def to_fp8_blocks(x, bm, bk):  # x [R, C]: one scale per bm x bk block
    r, c = x.shape
    xb = x.float().reshape(r // bm, bm, c // bk, bk)
    amax = xb.abs().amax(dim=(1, 3), keepdim=True).clamp(min=1e-12)
    scale = E4M3_MAX / amax
    q = (xb * scale).to(E4M3).reshape(r, c)
    return q, (1.0 / scale).reshape(r // bm, c // bk)


def rel_err(out, ref):
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def gemm_cases(rec):
    # (m, n, k): tokens x out-features x in-features of transformer layers (Llama 3 8B / 70B / 405B,
    # DeepSeek-V3 experts and attention projections), plus squares.
    shapes = [(8192, 4096, 4096), (8192, 6144, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
              (8192, 8192, 8192), (8192, 10240, 8192), (8192, 57344, 8192), (8192, 8192, 28672),
              (16384, 16384, 16384), (4096, 4096, 4096), (2048, 2048, 2048), (4096, 4096, 7168),
              (4096, 7168, 2048), (4096, 24576, 1536), (16384, 53248, 16384)]
    for m, n, k in shapes:
        flops = 2.0 * m * n * k
        a = rnd(m, k)
        w = rnd(n, k)  # nn.Linear layout: out x in
        ref = None

        def bf16():
            out = torch.mm(a, w.t())
            ms, n_s, spread = median_ms(lambda: torch.mm(a, w.t()))
            return {"ms": ms, "tflops": flops / ms / 1e9, "samples": n_s, "spread": spread}

        row = rec.case("gemm", {"case": "bf16", "m": m, "n": n, "k": k}, bf16)
        if row is None:
            return
        bf16_ms = row.get("ms")
        ref = torch.mm(a[:256].float(), w.float().t())

        def timed_fp8(call):  # one FP8 GEMM: its time, rate, speed-up over BF16 and error on 256 rows
            out = call()
            ms, n_s, spread = median_ms(call)
            return {"ms": ms, "tflops": flops / ms / 1e9, "vs_bf16": (bf16_ms / ms) if bf16_ms else None,
                    "rel_err": rel_err(out[:256], ref), "samples": n_s, "spread": spread}

        def tensorwise(fast):
            def run():
                aq, sa = to_fp8_tensorwise(a)
                wq, sw = to_fp8_tensorwise(w)
                return timed_fp8(lambda: torch._scaled_mm(aq, wq.t(), scale_a=sa, scale_b=sw, out_dtype=BF16,
                                                          use_fast_accum=fast))
            return run

        rec.case("gemm", {"case": "fp8_tensorwise_fast_accum", "m": m, "n": n, "k": k}, tensorwise(True))
        rec.case("gemm", {"case": "fp8_tensorwise", "m": m, "n": n, "k": k}, tensorwise(False))

        def rowwise():
            aq, sa = to_fp8_rowwise(a)
            wq, sw = to_fp8_rowwise(w)
            return timed_fp8(lambda: torch._scaled_mm(aq, wq.t(), scale_a=sa, scale_b=sw.t(), out_dtype=BF16))

        rec.case("gemm", {"case": "fp8_rowwise", "m": m, "n": n, "k": k}, rowwise)

        def blockwise():
            aq, sa = to_fp8_blocks(a, 1, 128)      # activations: 1 x 128 tiles, scales [m, k/128]
            wq, sw = to_fp8_blocks(w, 128, 128)    # weights: 128 x 128 blocks, scales [n/128, k/128]
            sa_t = sa.t().contiguous().t()         # cuBLAS wants the activation scales token-major
            return timed_fp8(lambda: F.scaled_mm(aq, wq.t(), sa_t, F.ScalingType.BlockWise1x128, sw.t(),
                                                 F.ScalingType.BlockWise128x128, output_dtype=BF16))

        rec.case("gemm", {"case": "fp8_blockwise_1x128_128x128", "m": m, "n": n, "k": k}, blockwise)

        rec.case("fp8_cast", {"case": "activation_m_by_k", "m": m, "n": n, "k": k}, lambda: eager_cast_cost(a))
        del a, w, ref


def eager_cast_cost(a):
    """The casts around an FP8 GEMM as PyTorch eager runs them (unfused): what a framework without
    fused cast kernels pays per operand, against a copy of the same tensor."""
    ms_t, _, _ = median_ms(lambda: to_fp8_tensorwise(a))
    ms_r, _, _ = median_ms(lambda: to_fp8_rowwise(a))
    ms_b, _, _ = median_ms(lambda: to_fp8_blocks(a, 1, 128))
    ms_copy, _, _ = median_ms(lambda: a.clone())
    nbytes = a.numel() * 2
    return {"bytes_bf16": nbytes, "eager_tensorwise_ms": ms_t, "eager_rowwise_ms": ms_r,
            "eager_blockwise_1x128_ms": ms_b, "bf16_copy_ms": ms_copy, "copy_gb_per_s": 2 * nbytes / ms_copy / 1e6}


def grouped_fp8_rowwise(x, w, offs, t, flops):
    """fc1 of the experts as an FP8 grouped GEMM with row-wise scales (torch._scaled_grouped_mm, fast
    accumulation): x [g t, h], w [g, n, h]; scales 1-D over x's rows and [g, n] over w's."""
    xq, sx = to_fp8_rowwise(x)
    wq_list, sw_list = zip(*[to_fp8_rowwise(w[i]) for i in range(w.shape[0])])
    wq, sw = torch.stack(wq_list), torch.stack(sw_list).squeeze(-1)
    sa = sx.squeeze(-1)
    call = lambda: torch._scaled_grouped_mm(xq, wq.transpose(-2, -1), sa, sw, offs=offs, out_dtype=BF16,
                                            use_fast_accum=True)
    out = call()
    ms, n_s, spread = median_ms(call)
    ref = torch.mm(x[:t].float(), w[0].float().t())
    return {"ms": ms, "tflops": flops / ms / 1e9, "rel_err": rel_err(out[:t], ref), "samples": n_s,
            "spread": spread, "scale_a_shape": list(sa.shape)}


# ---------------------------------------------------------------- MoE grouped GEMMs
def grouped_cases(rec):
    # (name, hidden, expert ffn, experts on this GPU): DeepSeek-V3 (EP 32: 8 of 256), Qwen3-30B-A3B
    # (EP 8: 16 of 128), Mixtral 8x7B (EP 4: 2 of 8), GPT-OSS-120B (EP 16: 8 of 128).
    models = [("deepseek-v3", 7168, 2048, 8), ("qwen3-30b-a3b", 2048, 768, 16), ("mixtral-8x7b", 4096, 14336, 2),
              ("gpt-oss-120b", 2880, 2880, 8)]
    for name, h, f, g in models:
        for t in (128, 512, 2048, 8192):
            if g * t * max(h, 2 * f) * 2 * 6 > 40e9:
                continue
            m = g * t
            offs = torch.arange(t, m + 1, t, device=DEV, dtype=torch.int32)
            x = rnd(m, h, scale=0.5)
            w1 = rnd(g, 2 * f, h, scale=0.02)  # fc1 (gate and up) per expert: out x in
            w2 = rnd(g, h, f, scale=0.02)      # fc2
            dy1 = rnd(m, 2 * f)
            fl1 = 2.0 * m * h * 2 * f
            fl2 = 2.0 * m * f * h
            params = {"model": name, "hidden": h, "ffn": f, "experts": g, "tokens_per_expert": t}

            def fc(w, flops, dy, x_in):
                def run():
                    out = torch._grouped_mm(x_in, w.transpose(-2, -1), offs=offs)
                    ref = torch.mm(x_in[:t].float(), w[0].float().t())
                    err = rel_err(out[:t], ref)
                    ms, n_s, spread = median_ms(lambda: torch._grouped_mm(x_in, w.transpose(-2, -1), offs=offs))
                    dense_w = w.reshape(-1, w.shape[-1])[: w.shape[1]]  # one expert's weight for all tokens
                    ms_dense, _, _ = median_ms(lambda: torch.mm(x_in, dense_w.t()))
                    ms_loop, _, _ = median_ms(lambda: [torch.mm(x_in[i * t:(i + 1) * t], w[i].t()) for i in range(g)])
                    xg = x_in.detach().requires_grad_(True)
                    wg = w.detach().requires_grad_(True)

                    def fwd_bwd():
                        xg.grad = wg.grad = None
                        y = torch._grouped_mm(xg, wg.transpose(-2, -1), offs=offs)
                        y.backward(dy)
                    ms_fb, _, _ = median_ms(fwd_bwd)
                    return {"ms": ms, "tflops": flops / ms / 1e9, "rel_err": err, "dense_same_tokens_ms": ms_dense,
                            "vs_dense": ms_dense / ms, "loop_of_gemms_ms": ms_loop, "fwd_bwd_ms": ms_fb,
                            "bwd_tflops": 2 * flops / max(ms_fb - ms, 1e-6) / 1e9, "samples": n_s, "spread": spread}
                return run

            rec.case("grouped_gemm", {"case": "fc1_bf16", **params}, fc(w1, fl1, dy1, x))
            xf = rnd(m, f, scale=0.5)
            rec.case("grouped_gemm", {"case": "fc2_bf16", **params}, fc(w2, fl2, rnd(m, h), xf))

            rec.case("grouped_gemm", {"case": "fc1_fp8_rowwise_fast_accum", **params},
                     lambda: grouped_fp8_rowwise(x, w1, offs, t, fl1))
            del x, w1, w2, dy1, xf
            if not rec.time_left():
                return


# ---------------------------------------------------------------- attention
def attention_cases(rec):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("flash2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    # (batch, heads, seq, qk head dim, v head dim): 16k tokens per call.
    shapes = [(8, 32, 2048, 128, 128), (4, 32, 4096, 128, 128), (2, 32, 8192, 128, 128),
              (8, 64, 2048, 64, 64), (4, 64, 4096, 64, 64), (2, 64, 8192, 64, 64),
              (4, 32, 4096, 192, 128), (1, 32, 16384, 128, 128)]
    for b, hds, s, d, dv in shapes:
        for bname, backend in backends:
            def run():
                q = rnd(b, hds, s, d).requires_grad_(True)
                k = rnd(b, hds, s, d).requires_grad_(True)
                v = rnd(b, hds, s, dv).requires_grad_(True)
                do = rnd(b, hds, s, dv)
                with sdpa_kernel([backend]):
                    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    out = fwd()

                    def fwd_bwd():
                        q.grad = k.grad = v.grad = None
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        o.backward(do)
                    ms_f, n_s, spread = median_ms(fwd)
                    ms_fb, _, _ = median_ms(fwd_bwd)
                # reference on the first head of the first sequence, in float32
                qr, kr, vr = q[0, :1].float(), k[0, :1].float(), v[0, :1].float()
                ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
                err = rel_err(out[0, :1], ref)
                # causal: half the s x s scores; fwd 2 GEMMs (qk: d, pv: dv), bwd 2.5x fwd (FlashAttention's count)
                fl_f = 2.0 * b * hds * s * s * (d + dv) / 2
                ms_b = ms_fb - ms_f
                return {"fwd_ms": ms_f, "bwd_ms": ms_b, "fwd_tflops": fl_f / ms_f / 1e9,
                        "bwd_tflops": 2.5 * fl_f / ms_b / 1e9, "rel_err": err, "samples": n_s, "spread": spread}

            rec.case("attention", {"backend": bname, "batch": b, "heads": hds, "seq": s, "head_dim": d,
                                   "v_head_dim": dv, "causal": True}, run)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tables", default="gemm:60,grouped:50,attention:40",
                        help="tables to run with each one's time budget in seconds")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to PyTorch", file=sys.stderr)
        return 1
    torch.manual_seed(7)
    rec = Recorder(args.out)
    props = torch.cuda.get_device_properties(0)
    rec.file.write(json.dumps({"table": "device", "name": props.name, "sms": props.multi_processor_count,
                               "memory_gib": props.total_memory / 2**30, "torch": torch.__version__,
                               "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                               "capability": list(torch.cuda.get_device_capability(0))}) + "\n")
    tables = {"gemm": gemm_cases, "grouped": grouped_cases, "attention": attention_cases}
    for item in args.tables.split(","):
        name, budget = item.split(":")
        rec.begin(float(budget))
        try:
            tables[name](rec)
        except Exception:
            traceback.print_exc()
    print(f"{rec.count} cases in {time.time() - rec.start:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
