#!/usr/bin/env python3
"""PyTorch peer of `tokenmix bench gemm --dtype bf16`.

Times torch.matmul on the five shapes of `tokenmix bench gemm` (M×K times
K×N, no transposes) in bfloat16 and in float32, and prints one JSON object
per shape and dtype: {"m", "n", "k", "dtype", "threads", "gflops"}, the
median of --reps timed samples (each at least 20 ms of calls).

    /usr/bin/python3 scripts/bench_torch_gemm_bf16.py --threads 2

Needs Debian's python3-torch.
"""
import argparse
import json
import time

import torch

SHAPES = [(512, 512, 512), (1024, 256, 256), (2048, 2048, 64), (2048, 64, 2048), (4096, 1024, 256)]


def rate(f, flops, reps):
    f()
    calls, t0 = 1, time.perf_counter()
    while time.perf_counter() - t0 < 0.02:
        f()
        calls += 1
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        ts.append((time.perf_counter() - t0) / calls)
    ts.sort()
    return flops / ts[len(ts) // 2] / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    with torch.inference_mode():
        for m, n, k in SHAPES:
            for dtype, name in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
                x = torch.randn(m, k).to(dtype)
                y = torch.randn(k, n).to(dtype)
                g = rate(lambda: torch.matmul(x, y), 2 * m * n * k, a.reps)
                print(json.dumps({"m": m, "n": n, "k": k, "dtype": name, "threads": a.threads, "gflops": round(g, 1)}))


if __name__ == "__main__":
    main()
