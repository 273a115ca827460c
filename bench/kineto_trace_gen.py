#!/usr/bin/env python3
"""Writes a synthetic PyTorch profiler (Kineto) trace of about --mb megabytes (plain JSON) for
bench/trace_reader.sh: ProfilerStep#N spans, per transformer layer the CPU ops with `Input Dims`,
`Input type`, `Input Strides` and `External id`, their `cudaLaunchKernel` calls, `ac2g` flow
events, the kernels (GEMMs, flash attention, RMSNorm, SiLU, elementwise) on two compute streams,
NCCL all-reduce / all-gather kernels on a third stream, memcpy and memset events, python_function
frames and GPU annotations. Field names and layouts follow the traces of ../shared/traces (PyTorch
2.x); the times are made up and mean nothing. Deterministic (seeded); the whole trace is never held.

Usage: kineto_trace_gen.py OUT.json [--mb 100] [--seed 1]"""
import argparse
import json
import random

CPU_PID, GPU_PID = 12345, 0
COMPUTE_STREAMS, COMM_STREAM = (7, 13), 21

# (kernel name, the CPU op that launches it, its Input Dims, mean duration in us)
LAYER_OPS = [
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
     "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
     "aten::native_layer_norm", [[4, 4096, 4096], [4096], [4096], [4096]], 45.0),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
     "aten::mm", [[16384, 4096], [4096, 12288]], 410.0),
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
     "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>"
     "(flash::Flash_fwd_params)", "aten::_scaled_dot_product_flash_attention", [[4, 32, 4096, 128]] * 3, 620.0),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "aten::mm", [[16384, 4096], [4096, 4096]], 140.0),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
     "aten::add", [[4, 4096, 4096], [4, 4096, 4096], []], 38.0),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
     "aten::mm", [[16384, 4096], [4096, 28672]], 960.0),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(at::TensorIteratorBase&)::"
     "{lambda()#1}::operator()() const::{lambda()#5}::operator()() const::{lambda(c10::BFloat16)#1}, "
     "std::array<char*, 2ul> >(int, at::native::silu_kernel, std::array<char*, 2ul>)",
     "aten::silu", [[4, 4096, 14336]], 70.0),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "aten::mm", [[16384, 14336], [14336, 4096]], 480.0),
]
NCCL = [("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 900.0),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 450.0)]


class Writer:
    def __init__(self, f, rng):
        self.f, self.rng, self.first = f, rng, True
        self.bytes = 0
        self.ext = self.corr = self.ev_idx = 0

    def emit(self, e):
        s = ("" if self.first else ",\n") + "  " + json.dumps(e, separators=(", ", ": "))
        self.first = False
        self.f.write(s)
        self.bytes += len(s)

    def cpu_op(self, name, ts, dur, dims, tid=CPU_PID):
        self.ext += 1
        self.ev_idx += 1
        self.emit({"ph": "X", "cat": "cpu_op", "name": name, "pid": CPU_PID, "tid": tid, "ts": round(ts, 3),
                   "dur": round(dur, 3),
                   "args": {"External id": self.ext, "Record function id": 0, "Sequence number": self.ext // 2,
                            "Fwd thread id": 0, "Concrete Inputs": [""] * len(dims),
                            "Input type": ["c10::BFloat16" if d else "Scalar" for d in dims],
                            "Input Strides": [[max(1, x) for x in reversed(d)] for d in dims],
                            "Input Dims": dims, "Ev Idx": self.ev_idx}})
        return self.ext

    def launch(self, ts, ext):
        self.corr += 1
        self.emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": CPU_PID, "tid": CPU_PID,
                   "ts": round(ts, 3), "dur": 4.2, "args": {"External id": ext, "cbid": 211, "correlation": self.corr}})
        self.emit({"ph": "s", "id": self.corr, "pid": CPU_PID, "tid": CPU_PID, "ts": round(ts, 3), "cat": "ac2g",
                   "name": "ac2g"})
        return self.corr

    def device(self, cat, name, ts, dur, stream, ext, corr, extra=None):
        args = {"External id": ext, "device": 0, "context": 1, "stream": stream, "correlation": corr}
        if cat == "kernel":
            args.update({"registers per thread": 168, "shared memory": 147456, "blocks per SM": 1.0,
                         "warps per SM": 8.0, "grid": [132, 1, 1], "block": [384, 1, 1],
                         "est. achieved occupancy %": 13})
        args.update(extra or {})
        self.emit({"ph": "X", "cat": cat, "name": name, "pid": GPU_PID, "tid": stream, "ts": round(ts, 3),
                   "dur": round(dur, 3), "args": args})
        self.emit({"ph": "f", "id": corr, "pid": GPU_PID, "tid": stream, "ts": round(ts, 3), "cat": "ac2g",
                   "name": "ac2g", "bp": "e"})


def write_step(w, step, cpu_t, gpu_t, layers):
    rng = w.rng
    step_start = cpu_t
    w.ext += 1
    step_ext = w.ext  # the step's user_annotation is written at its end, when its duration is known
    spans = []
    for layer in range(layers):
        layer_gpu_start = gpu_t
        w.emit({"ph": "X", "cat": "python_function", "name": f"nn.Module: TransformerBlock_{layer}", "pid": CPU_PID,
                "tid": CPU_PID, "ts": round(cpu_t, 3), "dur": 900.0,
                "args": {"Python parent id": 2, "Python id": 1000 + layer, "Python module id": layer}})
        for i, (kernel, op, dims, mean_us) in enumerate(LAYER_OPS):
            dur_cpu = rng.uniform(8, 20)
            ext = w.cpu_op(op, cpu_t, dur_cpu, dims)
            corr = w.launch(cpu_t + dur_cpu * 0.5, ext)
            stream = COMPUTE_STREAMS[i % 2 if op == "aten::add" else 0]
            dur = mean_us * rng.uniform(0.9, 1.1)
            w.device("kernel", kernel, gpu_t, dur, stream, ext, corr)
            gpu_t += dur + rng.uniform(1, 4)
            cpu_t += dur_cpu + rng.uniform(2, 6)
        if layer % 2 == 1:  # a gradient bucket's all-reduce, overlapped with the next layer
            name, mean_us = NCCL[(layer // 2) % 2]
            ext = w.cpu_op("record_param_comms", cpu_t, 12.0, [[rng.choice([25, 50]) * 1 << 20]])
            corr = w.launch(cpu_t + 6, ext)
            w.device("kernel", name, layer_gpu_start + 50, mean_us * rng.uniform(0.8, 1.2), COMM_STREAM, ext, corr)
            cpu_t += 20
        if layer % 8 == 0:
            ext = w.cpu_op("aten::copy_", cpu_t, 9.0, [[4, 4096], [4, 4096], []])
            corr = w.launch(cpu_t + 4, ext)
            w.device("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", gpu_t, 6.5, COMPUTE_STREAMS[0], ext, corr,
                     {"kind": "HtoD", "bytes": 131072, "memory bandwidth (GB/s)": 20.1})
            gpu_t += 8
            ext = w.cpu_op("aten::zero_", cpu_t + 10, 6.0, [[4096, 4096]])
            corr = w.launch(cpu_t + 12, ext)
            w.device("gpu_memset", "Memset (Device)", gpu_t, 2.1, COMPUTE_STREAMS[0], ext, corr,
                     {"kind": "Device", "bytes": 33554432})
            gpu_t += 3
            cpu_t += 20
        spans.append((f"layer_{layer}", layer_gpu_start, gpu_t - layer_gpu_start))
    for name, ts, dur in spans:
        w.emit({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": GPU_PID, "tid": COMPUTE_STREAMS[0],
                "ts": round(ts, 3), "dur": round(dur, 3), "args": {"External id": step_ext}})
    sync = cpu_t  # the step ends in a synchronize that waits for the GPU (an optimizer step's .item())
    cpu_t = max(cpu_t, gpu_t) + 5
    w.corr += 1
    w.emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": CPU_PID, "tid": CPU_PID,
            "ts": round(sync, 3), "dur": round(cpu_t - sync, 3), "args": {"cbid": 165, "correlation": w.corr}})
    w.emit({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": CPU_PID, "tid": CPU_PID,
            "ts": round(step_start, 3), "dur": round(cpu_t - step_start, 3),
            "args": {"External id": step_ext, "Record function id": 0, "Ev Idx": w.ev_idx}})
    return cpu_t + 100, cpu_t + 150


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with open(args.out, "w") as f:
        f.write('{\n"schemaVersion": 1,\n"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", '
                '"totalGlobalMem": 85029158912, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],\n'
                '"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},\n"traceEvents": [\n')
        w = Writer(f, rng)
        for pid, name in ((CPU_PID, "python3"), (GPU_PID, "python3")):
            w.emit({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": name}})
        cpu_t, gpu_t, step = 1.7e12, 1.7e12 + 500, 1
        while w.bytes < args.mb * 1e6:
            cpu_t, gpu_t = write_step(w, step, cpu_t, gpu_t, layers=32)
            step += 1
        f.write('\n],\n"traceName": "synthetic.pt.trace.json", "displayTimeUnit": "ms"\n}\n')
    print(f"{args.out}: {w.bytes / 1e6:.1f} MB of events, {step - 1} steps, {w.corr} launches")


if __name__ == "__main__":
    main()
