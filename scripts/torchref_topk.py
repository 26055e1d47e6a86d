"""Top-k attention ("kind": "topk") for the PyTorch reference (Zhao et al.
2019, "Explicit Sparse Transformer").

q, k, v, o are d->d linears; heads are contiguous channel groups of
dh = d/n_heads; s = q k^T / sqrt(dh) over allowed keys (j <= i when causal;
keys holding pad_id excluded). Each query keeps its k largest allowed scores
(every score equal to the k-th largest is kept; all allowed keys when at most
k are), the others are set to -inf, and p = softmax; out = o(concat_h(p v)).
A query with no allowed key gets zeros before o. Option: k (int >= 1,
default 8).
"""
import math

import torch
import torch.nn as nn


class TopK(nn.Module):
    def __init__(self, mc):
        super().__init__()
        opts = dict(mc.opts)
        k = opts.pop("k", 8)
        if opts:
            raise ValueError(f"mixer: unknown option(s) {sorted(opts)} for kind 'topk'")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError("mixer.k: want an integer >= 1")
        self.h, self.causal, self.topk = mc.heads, mc.causal, k
        self.q, self.k, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(4))

    def forward(self, x, pad, seed):
        B, T, D = x.shape
        H, dh = self.h, D // self.h
        q, k, v = (f(x).view(B, T, H, dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)  # [B,H,T,T]
        allow = torch.ones(T, T, dtype=torch.bool)
        if self.causal:
            allow = torch.tril(allow)
        allow = allow[None, None].expand(B, H, T, T)
        if pad is not None:
            allow = allow & ~pad[:, None, None, :]
        any_key = allow.any(-1, keepdim=True)
        s = s.masked_fill(~allow, float("-inf"))
        kth = s.topk(min(self.topk, T), dim=-1).values[..., -1:]  # -inf when <= k allowed
        keep = allow & (s >= kth)
        s = s.masked_fill(~keep, float("-inf")).masked_fill(~any_key, 0.0)
        p = torch.softmax(s, -1) * any_key
        out = (p @ v).transpose(1, 2).reshape(B, T, D)
        return self.o(out)
