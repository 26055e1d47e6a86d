#!/usr/bin/python3
"""Times one training step of `python -m tokenmix_torch.train` (forward,
backward, DistributedDataParallel's gradient averaging over Gloo, clipping,
AdamW) on 1 and more CPU processes, in float32 and under bf16 autocast, for
comparison with `tokenmix bench train` at the same config, length and
batch. The global batch stays --batch: N processes take --batch/N rows
each, so a step does the same work at every N.

    /usr/bin/python3 scripts/bench_torch_ddp.py --config scripts/speed_d256.json --len 1024 --batch 4
    tokenmix --threads 2 bench train --config scripts/speed_d256.json --len 1024 --batch 4 --json

Prints one JSON object per (processes, precision): {"nproc", "threads"
(per process), "precision", "len", "batch", "step_ms", "tokens_per_s",
"torch"}, step_ms the median over --reps steps after one warm-up step.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as tdist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import tokenmix_torch  # noqa: E402
from tokenmix_torch import config  # noqa: E402
from tokenmix_torch.train import dist, loop  # noqa: E402


def measure(rank, a, cfg, n, bf16):
    topo = dist.Topology(rank, n, rank, n)
    torch.set_num_threads(max(1, a.threads // n))
    dist.init(topo, "cpu")
    tc = config.train(cfg)
    model = tokenmix_torch.Model(cfg)
    tokenmix_torch.train.init(model, 0)
    net = torch.nn.parallel.DistributedDataParallel(model) if n > 1 else model
    opt = tokenmix_torch.optimizer(model)
    params = list(model.parameters())
    B, T = a.batch, a.len
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, cfg["vocab_size"], (B, T), generator=g)
    if cfg["task"] == "classify":
        targets, nt = torch.randint(0, cfg["n_classes"], (B,), generator=g), B
    else:
        targets, nt = torch.randint(0, cfg["vocab_size"], (B, T), generator=g), B * T
    r = dist.rows(B, rank, n)
    tok, tgt = tokens[r.start:r.stop], targets[r.start:r.stop]

    def step():
        opt.zero_grad(set_to_none=True)
        loop.gradients(net, params, tok, tgt, nt, n, tc["grad_clip"], bf16)
        opt.step()

    step()
    ts = []
    for _ in range(a.reps):
        if n > 1:
            tdist.barrier()
        t0 = time.perf_counter()
        step()
        if n > 1:
            tdist.barrier()
        ts.append(time.perf_counter() - t0)
    if rank == 0:
        sec = statistics.median(ts)
        print(json.dumps({"nproc": n, "threads": max(1, a.threads // n), "precision": "bf16" if bf16 else "fp32",
                          "len": T, "batch": B, "step_ms": round(sec * 1e3, 1),
                          "tokens_per_s": round(B * T / sec, 1), "torch": torch.__version__}), flush=True)
    dist.finish(topo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="model config JSON")
    ap.add_argument("--len", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--nproc", default="1,2", help="process counts, comma-separated")
    ap.add_argument("--precision", default="fp32,bf16", help="fp32 and/or bf16 (autocast), comma-separated")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="torch threads in all (each of N processes gets threads/N)")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    try:
        cfg = config.load(a.config)
        cfg["max_len"] = max(cfg["max_len"], a.len)
        config.check(cfg)
        nprocs = [int(x) for x in a.nproc.split(",")]
        precs = a.precision.split(",")
    except ValueError as e:
        sys.exit(f"bench_torch_ddp: {e}")
    for p in precs:
        if p not in ("fp32", "bf16"):
            sys.exit(f"bench_torch_ddp: --precision: want fp32 or bf16, got {p!r}")
    for n in nprocs:
        if n < 1 or a.batch % n:
            sys.exit(f"bench_torch_ddp: --nproc {n}: want N ≥ 1 dividing --batch {a.batch}")
    for p in precs:
        for n in nprocs:
            if n == 1:
                measure(0, a, cfg, 1, p == "bf16")
            elif dist.spawn(measure, n, (a, cfg, n, p == "bf16")):
                sys.exit(1)


if __name__ == "__main__":
    main()
