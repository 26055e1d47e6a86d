#!/usr/bin/env python3
"""Sparse Transformer speed targets (issue 4): strided and fixed vs full.

    python3 scripts/bench_sparse.py [--threads 2] [--reps 3]
        [--lens 2048,4096,8192,16384] [--full-lens 4096,16384]
        [--torch-lens 4096]

Runs `tokenmix bench mixer` (float32, one mixer layer with its q, k, v, o
projections, B=1, d_model 256, 4 heads, causal; strided block 64, fixed
block 64 summary 8, combine "heads") for each kind and length, alternating
the kinds so that load from other processes hits them alike, and prints
forward + backward time, the full / sparse speed-ups (targets: ≥ 3.5 at
T=4096, ≥ 8 at T=16384) and each sparse kind's T=8192 / T=2048 time ratio
(target ≤ 9; O(T²) would give 16).

With --torch-lens it also times the masked-dense PyTorch 1.13 layer a
PyTorch user would write (same projections; scores [B,H,T,T] filled with
-inf outside each head's allowed set, softmax, times v) with /usr/bin/python3
in a subprocess, and prints tokenmix's speed-up over it (target ≥ 10 at
T=4096).

Notes:
- Only ratios measured in one run mean anything on a shared machine.
- Full attention at T=16384 takes tens of seconds per pass: keep --reps low.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIXERS = {
    "full": {"kind": "full"},
    "strided": {"kind": "strided", "block": 64, "combine": "heads"},
    "fixed": {"kind": "fixed", "block": 64, "summary": 8, "combine": "heads"},
}

# The PyTorch peer runs in its own interpreter (the one with torch).
TORCH_PEER = r'''
import json, math, statistics, sys, time
import torch, torch.nn as nn
kind, T, threads, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
torch.manual_seed(0)
d, H, l, c = 256, 4, 64, 8
i = torch.arange(T)[:, None]
j = torch.arange(T)[None, :]
causal = j <= i
if kind == "strided":
    a1 = causal & (i - j <= l)
    a2 = causal & ((i - j) % l == 0)
else:
    a1 = causal & (j // l == i // l)
    a2 = causal & (j % l >= l - c)
eye = i == j
mask = torch.stack([a1 | eye] * (H // 2) + [a2 | eye] * (H // 2))  # [H,T,T], combine=heads
q, k, v, o = (nn.Linear(d, d) for _ in range(4))
x0 = torch.randn(1, T, d)
def layer(x):
    B = x.shape[0]
    sh = lambda y: y.view(B, T, H, d // H).transpose(1, 2)
    s = sh(q(x)) @ sh(k(x)).transpose(-1, -2) / math.sqrt(d // H)
    p = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
    return o((p @ sh(v(x))).transpose(1, 2).reshape(B, T, d))
def once():
    x = x0.detach().requires_grad_(True)
    t0 = time.perf_counter()
    y = layer(x)
    y.backward(torch.ones_like(y))
    return (time.perf_counter() - t0) * 1e3
once()
print(json.dumps({"ms": statistics.median(once() for _ in range(reps)), "torch": torch.__version__}))
'''


def config(kind, max_len):
    return {"vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 1, "d_ff": 1024,
            "max_len": max_len, "causal": True, "task": "lm", "mixer": MIXERS[kind]}


def ints(s):
    return [int(x) for x in s.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lens", default="2048,4096,8192,16384", help="lengths for strided and fixed")
    ap.add_argument("--full-lens", default="4096,16384", help="lengths for full attention")
    ap.add_argument("--torch-lens", default="", help="lengths for the PyTorch masked-dense peers")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch")
    a = ap.parse_args()
    lens, full_lens, torch_lens = ints(a.lens), ints(a.full_lens), ints(a.torch_lens)
    tmp = tempfile.mkdtemp(prefix="bench_sparse")
    exe = os.path.join(tmp, "tokenmix")
    subprocess.run(["go", "build", "-o", exe, "./cmd/tokenmix"], cwd=ROOT, check=True)
    top = max(lens + full_lens)
    for kind in MIXERS:
        with open(os.path.join(tmp, kind + ".json"), "w") as f:
            json.dump(config(kind, top), f)
    ms = {}
    for T in sorted(set(lens + full_lens)):
        for kind in MIXERS:
            if T not in (full_lens if kind == "full" else lens):
                continue
            out = subprocess.run([exe, "--threads", str(a.threads), "bench", "mixer", "--config",
                                  os.path.join(tmp, kind + ".json"), "--len", str(T), "--reps", str(a.reps),
                                  "--json"], check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            ms[kind, T] = r["fwd_ms"] + r["bwd_ms"]
            print(f"tokenmix {kind:7s} T={T:6d} threads={a.threads}: forward {r['fwd_ms']:9.1f} ms, "
                  f"backward {r['bwd_ms']:9.1f} ms, planned {r['planned_bytes'] / 2**20:7.1f} MiB", flush=True)
    for T in full_lens:
        for kind in ("strided", "fixed"):
            if (kind, T) in ms:
                print(f"T={T}: full / {kind} = {ms['full', T] / ms[kind, T]:.2f}")
    if 2048 in lens and 8192 in lens:
        for kind in ("strided", "fixed"):
            print(f"{kind}: T=8192 / T=2048 = {ms[kind, 8192] / ms[kind, 2048]:.2f}")
    for T in torch_lens:
        for kind in ("strided", "fixed"):
            out = subprocess.run([a.python, "-c", TORCH_PEER, kind, str(T), str(a.threads), str(a.reps)],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            line = f"torch {r['torch']} masked-dense {kind} T={T} threads={a.threads}: fwd+bwd {r['ms']:.1f} ms"
            if (kind, T) in ms:
                line += f"; torch / tokenmix = {r['ms'] / ms[kind, T]:.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
