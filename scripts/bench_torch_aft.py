#!/usr/bin/python3
"""PyTorch peers of tokenmix's attention-free mixers: forward+backward time.

    /usr/bin/python3 scripts/bench_torch_aft.py --threads 2 --T 1024 4096 16384

Each peer is the most direct efficient PyTorch (1.13) formulation, float32,
d=256, B=1, the whole mixer layer (q, k, v, o linears included for AFT):

    aft_simple  O(T*d): softmax of K over time (bidirectional) or cumulative
                sums of exp(K - max)*V and exp(K - max) (causal)
    aft_local   AFT-simple sums + banded correction sum_{|t-t'|<s}
                (exp(w[t,t']) - 1) exp(K[t']) V[t'] via unfold (O(T*s*d))
    aft_conv    AFT-simple sums + depthwise conv1d of exp(K)*V and exp(K)
                with the per-head kernel exp(rel_bias) - 1 (O(T*s*d))
    fnet        torch.fft.fft2(x).real

Prints one line per (kind, T): median forward+backward milliseconds over
--reps runs after one warm-up, plus the thread count; tokenmix's side is
`tokenmix bench mixer` (or `go test -bench Mixers ./internal/mixer/aft/`) run right
after on the same machine.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class AFTPeer(nn.Module):
    def __init__(self, kind, d, T, window, heads, causal):
        super().__init__()
        self.kind, self.s, self.h, self.causal = kind, window, heads, causal
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        if kind == "aft_local":
            # Only the band of the [T,T] pos_bias is ever read: keep it as
            # [T, 2s-1] (offsets t'-t = -(s-1)...s-1) to give the peer its
            # best memory layout.
            self.band = nn.Parameter(torch.zeros(T, 2 * window - 1))
        if kind == "aft_conv":
            self.rel = nn.Parameter(torch.zeros(heads, window))

    def sums(self, ek, v):
        """(sum exp(K) V, sum exp(K)) over allowed t', [1,T,d] each."""
        if self.causal:
            return torch.cumsum(ek * v, 1), torch.cumsum(ek, 1)
        return (ek * v).sum(1, keepdim=True), ek.sum(1, keepdim=True)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        B, T, d = x.shape
        k = k - k.max(1, keepdim=True).values.detach()
        ek = torch.exp(k)
        num, den = self.sums(ek, v)
        if self.kind == "aft_local":
            s = self.s
            ev = torch.stack([ek * v, ek], 0)  # [2,B,T,d]
            right = s - 1 if not self.causal else 0
            pad = F.pad(ev, (0, 0, s - 1, right))  # pad time
            win = pad.unfold(2, s + right, 1)  # [2,B,T,d,W]
            coef = torch.exp(self.band[:T, : s + right]) - 1  # [T,W]
            corr = torch.einsum("zbtdw,tw->zbtd", win, coef)
            num, den = num + corr[0], den + corr[1]
        elif self.kind == "aft_conv":
            s, h = self.s, self.h
            ev = torch.cat([ek * v, ek], 2).transpose(1, 2)  # [B,2d,T]
            kern = (torch.exp(self.rel) - 1).flip(1)  # tap o at lag o
            kern = kern.repeat_interleave(d // h, 0).repeat(2, 1)[:, None, :]  # [2d,1,s]
            left = s - 1 if self.causal else (s - 1) // 2
            corr = F.conv1d(F.pad(ev, (left, s - 1 - left)), kern, groups=2 * d)
            corr = corr.transpose(1, 2)
            num, den = num + corr[..., :d], den + corr[..., d:]
        return self.o(torch.sigmoid(q) * num / den)


class FNetPeer(nn.Module):
    def forward(self, x):
        return torch.fft.fft2(x).real


def time_peer(m, x, reps):
    def once():
        xx = x.detach().requires_grad_(True)
        t0 = time.perf_counter()
        out = m(xx)
        out.backward(torch.ones_like(out))
        return (time.perf_counter() - t0) * 1e3
    once()
    return statistics.median(once() for _ in range(reps))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--T", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--kinds", nargs="+", default=["aft_simple", "aft_local", "aft_conv", "fnet"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    for T in a.T:
        x = torch.randn(1, T, a.d)
        for kind in a.kinds:
            if kind == "fnet":
                if a.causal:
                    continue
                m = FNetPeer()
            else:
                window = 32 if kind == "aft_local" else 31
                m = AFTPeer(kind, a.d, T, window, 4, a.causal)
            ms = time_peer(m, x, a.reps)
            print(f"torch {torch.__version__} {kind} T={T} d={a.d} B=1 causal={a.causal} "
                  f"threads={a.threads}: fwd+bwd {ms:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
