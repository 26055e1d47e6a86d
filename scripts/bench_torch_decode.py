#!/usr/bin/env python3
"""PyTorch peer of `tokenmix bench decode` for full attention.

A causal lm with the shape of tokenmix's model contract (token and learned
position embeddings, pre-LN blocks of multi-head attention and a GELU
feed-forward, final LayerNorm, linear head), random float32 weights, decoded
one token at a time with a key-value cache under torch.inference_mode. It
prints, like `tokenmix bench decode --json`, one JSON object per position:
{"pos", "ms_per_token"}, the median of --reps single-token steps there.

    /usr/bin/python3 scripts/bench_torch_decode.py --threads 2

Needs Debian's python3-torch.
"""
import argparse
import json
import math
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dff", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--max-len", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=16)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    D, H, L, F, V, T = a.d, a.heads, a.layers, a.dff, a.vocab, a.max_len
    Dh = D // H
    r = lambda *s: torch.randn(*s) * 0.02
    emb, pos = r(V, D), r(T, D)
    blocks = [dict(ln1=torch.nn.LayerNorm(D), ln2=torch.nn.LayerNorm(D),
                   qkv=torch.nn.Linear(D, 3 * D), o=torch.nn.Linear(D, D),
                   fc1=torch.nn.Linear(D, F), fc2=torch.nn.Linear(F, D)) for _ in range(L)]
    lnf, head = torch.nn.LayerNorm(D), torch.nn.Linear(D, V)
    K = [torch.zeros(H, T, Dh) for _ in range(L)]
    Vc = [torch.zeros(H, T, Dh) for _ in range(L)]
    scale = 1 / math.sqrt(Dh)

    def step(tokens, t0):
        # tokens [n] at positions t0…t0+n−1; returns the last logits.
        n = tokens.shape[0]
        x = emb[tokens] + pos[t0:t0 + n]
        for b, k, v in zip(blocks, K, Vc):
            qkv = b["qkv"](b["ln1"](x)).view(n, 3, H, Dh)
            q, kn, vn = qkv[:, 0].transpose(0, 1), qkv[:, 1].transpose(0, 1), qkv[:, 2].transpose(0, 1)
            k[:, t0:t0 + n] = kn
            v[:, t0:t0 + n] = vn
            s = q @ k[:, :t0 + n].transpose(1, 2) * scale  # [H, n, t]
            if n > 1:
                mask = torch.ones(n, t0 + n, dtype=torch.bool).tril(t0)
                s = s.masked_fill(~mask, float("-inf"))
            o = (s.softmax(-1) @ v[:, :t0 + n]).transpose(0, 1).reshape(n, D)
            x = x + b["o"](o)
            x = x + b["fc2"](torch.nn.functional.gelu(b["fc1"](b["ln2"](x))))
        return head(lnf(x[-1:]))

    g = torch.Generator().manual_seed(2)
    with torch.inference_mode():
        t = 0
        for p in (256, 1024, 4096):
            if p + a.reps > T:
                break
            while t < p:  # prefill up to p in chunks
                n = min(512, p - t)
                step(torch.randint(V, (n,), generator=g), t)
                t += n
            times = []
            for _ in range(a.reps):
                tok = torch.randint(V, (1,), generator=g)
                t1 = time.perf_counter()
                step(tok, t)
                times.append((time.perf_counter() - t1) * 1000)
                t += 1
            times.sort()
            print(json.dumps({"pos": p, "ms_per_token": times[len(times) // 2]}), flush=True)


if __name__ == "__main__":
    main()
