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
Usage (on the GPU machine): python3 bench/gpu_kernels.py --out kernels.jsonl [--tables gemm:60,grouped:50,attention:40,gptoss:30]
The gptoss table times GPT-OSS's eager code around its kernels as Megatron-Core runs it (the clamped
GLU, YaRN's unfused RoPE, the blocking offset tensor) against what docs/cost-model.md prices.
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


# ---------------------------------------------------------------- GPT-OSS's eager code around its kernels
# What docs/cost-model.md prices from Megatron-Core's code ("Clamped GLU", "YaRN RoPE", "Host
# synchronisations"), timed as that code runs it, at the H100 recipe's shapes (micro-batch 1, 4096
# tokens, EP 8: 16,384 routed copies of width 2880; Q 64 x 64 and K 8 x 64 per token). Each case
# gives its time and the bytes a plain device copy moves in that time per byte of the tensor the
# model prices against (`copy_equivalent`): the model's 8 / 15 (the clamp and cat, forward /
# backward, per byte of the activation's output) and 10 / 17 (unfused RoPE per byte of Q and K).
def _copy_bytes_per_s(n_bytes):
    x = torch.empty(n_bytes // 2, device=DEV, dtype=BF16)
    y = torch.empty_like(x)
    ms, _, _ = median_ms(lambda: y.copy_(x))
    return 2.0 * n_bytes / (ms / 1e3)  # read + write


def _quick_geglu(y, weights, offset):  # megatron/core/fusions/fused_bias_geglu.py weighted_quick_geglu
    y1, y2 = torch.chunk(y, 2, -1)
    return ((y1 * torch.sigmoid(1.702 * y1)) * (y2 + offset) * weights).to(y.dtype)


def gptoss_cases(rec):
    rows, width, limit = 4096 * 4, 2880, 7.0
    inner = rows * width * 2  # the activation's output, bf16
    bw = _copy_bytes_per_s(inner)
    try:
        act = torch.compile(_quick_geglu)
        compiled = True
    except Exception:  # no inductor here: eager, and said so
        act, compiled = _quick_geglu, False

    def clamped(x, w):  # weighted_bias_quick_geglu_impl with clamp_value (bias None)
        x_glu, x_linear = x.chunk(2, -1)
        x = torch.cat((x_glu.clamp(min=None, max=limit), x_linear.clamp(min=-limit, max=limit)), -1)
        offset = torch.tensor(1.0, dtype=x.dtype, device=x.device)  # a blocking copy to the device
        return act(x, w, offset)

    def plain(x, w):
        return act(x, w, 1.0)

    def glu_case():
        x = rnd(rows, 2 * width, scale=4.0).requires_grad_(True)
        w = torch.rand(rows, 1, device=DEV, dtype=torch.float32)
        g = rnd(rows, width)
        out = {"compiled": compiled, "copy_gb_per_s": bw / 1e9}
        for name, fn in (("plain", plain), ("clamped", clamped)):
            fn(x, w)  # compile outside the timing
            ms_f, _, _ = median_ms(lambda: fn(x, w))

            def fwd_bwd():
                x.grad = None
                fn(x, w).backward(g)
            ms_fb, _, _ = median_ms(fwd_bwd)
            out[name + "_fwd_ms"], out[name + "_bwd_ms"] = ms_f, ms_fb - ms_f
        for part in ("fwd", "bwd"):
            extra_s = (out["clamped_" + part + "_ms"] - out["plain_" + part + "_ms"]) / 1e3
            out["copy_equivalent_" + part] = extra_s * bw / inner  # model: 8 forward, 15 backward
        return out

    rec.case("gptoss", {"case": "clamped_glu", "rows": rows, "width": width}, glu_case)

    def rope_case():  # megatron/core/models/common/embeddings/rope_utils.py _apply_rotary_pos_emb_bshd
        s, mscale = 4096, 0.1 * math.log(32.0) + 1.0
        freqs = torch.rand(s, 1, 1, 64, device=DEV, dtype=torch.float32)

        def rotate_half(t):
            t1, t2 = torch.chunk(t, 2, dim=-1)
            return torch.cat((-t2, t1), dim=-1)

        def rope(t):
            rot = freqs.shape[-1]
            t, t_pass = t[..., :rot], t[..., rot:]
            cos_ = (torch.cos(freqs) * mscale).to(t.dtype)
            sin_ = (torch.sin(freqs) * mscale).to(t.dtype)
            t = (t * cos_) + (rotate_half(t) * sin_)
            return torch.cat((t, t_pass), dim=-1)

        q = rnd(s, 1, 64, 64).requires_grad_(True)
        k = rnd(s, 1, 8, 64).requires_grad_(True)
        gq, gk = rnd(s, 1, 64, 64), rnd(s, 1, 8, 64)
        qk_bytes = (q.numel() + k.numel()) * 2
        ms_f, _, _ = median_ms(lambda: (rope(q), rope(k)))

        def fwd_bwd():
            q.grad = k.grad = None
            torch.autograd.backward([rope(q), rope(k)], [gq, gk])
        ms_fb, _, _ = median_ms(fwd_bwd)
        bw_qk = _copy_bytes_per_s(qk_bytes)
        return {"fwd_ms": ms_f, "bwd_ms": ms_fb - ms_f, "copy_gb_per_s": bw_qk / 1e9,
                "copy_equivalent_fwd": ms_f / 1e3 * bw_qk / qk_bytes,  # model: 10
                "copy_equivalent_bwd": (ms_fb - ms_f) / 1e3 * bw_qk / qk_bytes}  # model: 17

    rec.case("gptoss", {"case": "yarn_rope_unfused", "tokens": 4096, "q_heads": 64, "kv_heads": 8, "head_dim": 64}, rope_case)

    def sync_case():  # does torch.tensor(x, device=cuda) wait for the queued work?
        a = rnd(8192, 8192)
        torch.cuda.synchronize()
        busy_ms, _, _ = median_ms(lambda: a @ a)
        for _ in range(20):
            a @ a
        t0 = time.perf_counter()
        torch.tensor(1.0, dtype=BF16, device=DEV)
        host_ms = (time.perf_counter() - t0) * 1e3
        torch.cuda.synchronize()
        return {"queued_ms": 20 * busy_ms, "host_ms": host_ms, "waits_for_device": host_ms > 5 * busy_ms}

    rec.case("gptoss", {"case": "offset_tensor_sync"}, sync_case)


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
    parser.add_argument("--tables", default="gemm:60,grouped:50,attention:40,gptoss:30",
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
    tables = {"gemm": gemm_cases, "grouped": grouped_cases, "attention": attention_cases, "gptoss": gptoss_cases}
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
