"""Full attention ("kind": "full") for the PyTorch reference (Vaswani et al.
2017): q, k, v, o are d->d linears; heads are contiguous channel groups of
dh = d/n_heads; p = softmax(q k^T / sqrt(dh)) over allowed keys (j <= i when
causal; keys holding pad_id excluded); out = o(concat_h(p v)). A query with
no allowed key gets zeros before o. Option "alibi": true adds the ALiBi bias
-m_h |i - j| to the scaled scores, m_h = 2^(-8 (h+1) / n_heads) (Press et al.
2022).
"""
import math

import torch
import torch.nn as nn


class Full(nn.Module):
    def __init__(self, mc):
        super().__init__()
        opts = dict(mc.opts)
        self.alibi = bool(opts.pop("alibi", False))
        if opts:
            raise ValueError(f"mixer: unknown option(s) {sorted(opts)} for kind 'full'")
        self.h, self.causal = mc.heads, mc.causal
        self.q, self.k, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(4))

    def forward(self, x, pad, seed):
        B, T, D = x.shape
        H, dh = self.h, D // self.h
        q, k, v = (f(x).view(B, T, H, dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)  # [B,H,T,T]
        if self.alibi:
            slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], dtype=s.dtype)
            pos = torch.arange(T, dtype=s.dtype)
            s = s - slopes[:, None, None] * (pos[:, None] - pos[None, :]).abs()
        allow = torch.ones(T, T, dtype=torch.bool)
        if self.causal:
            allow = torch.tril(allow)
        allow = allow[None, None].expand(B, 1, T, T)
        if pad is not None:
            allow = allow & ~pad[:, None, None, :]
        any_key = allow.any(-1, keepdim=True)  # [B,1,T,1]
        s = s.masked_fill(~allow, float("-inf")).masked_fill(~any_key, 0.0)
        p = torch.softmax(s, -1) * any_key
        out = (p @ v).transpose(1, 2).reshape(B, T, D)
        return self.o(out)
