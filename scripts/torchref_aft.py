"""Attention Free Transformer mixers for the PyTorch reference (Zhai et al.
2021, "An Attention Free Transformer"): kinds aft_full, aft_simple,
aft_local and aft_conv.

q, k, v, o are d->d linears; per channel c

    Y[t,c] = sigmoid(Q[t,c]) * sum_t' exp(K[t',c] + w[t,t']) V[t',c] / sum_t' exp(K[t',c] + w[t,t'])
    out    = o(Y)

over allowed t' (t' <= t when causal; keys holding pad_id excluded). A row
with no allowed t' gets Y = 0. w is

    aft_full    pos_bias[t,t']                         pos_bias [max_len,max_len]
    aft_simple  0
    aft_local   pos_bias[t,t'] if |t-t'| < window else 0
    aft_conv    rel_bias[head(c), o] if t-t' = delta(o) else 0, rel_bias [heads,window],
                delta(o) = o (causal) or o - (window-1)/2 (bidirectional, window odd),
                head(c) = c // (d/heads)

This is the direct O(T^2 d) formula (a masked softmax over t' per channel),
independent of the Go kernels; autograd gives the gradients.
"""
import torch
import torch.nn as nn

DEFAULT_WINDOW = {"aft_local": 32, "aft_conv": 31}


class AFT(nn.Module):
    def __init__(self, kind, mc):
        super().__init__()
        opts = dict(mc.opts)
        self.kind, self.causal, self.d = kind, mc.causal, mc.d
        self.window = opts.pop("window", DEFAULT_WINDOW.get(kind)) if kind in DEFAULT_WINDOW else None
        self.heads = opts.pop("heads", mc.heads) if kind == "aft_conv" else 1
        if opts:
            raise ValueError(f"mixer: unknown option(s) {sorted(opts)} for kind {kind!r}")
        if kind == "aft_conv" and (mc.d % self.heads or (not mc.causal and self.window % 2 == 0)):
            raise ValueError("mixer: aft_conv needs heads | d and an odd window when bidirectional")
        self.q, self.k, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(4))
        self.no_decay = ()
        if kind in ("aft_full", "aft_local"):
            self.pos_bias = nn.Parameter(torch.zeros(mc.max_len, mc.max_len))
            self.no_decay = ("pos_bias",)
        elif kind == "aft_conv":
            self.rel_bias = nn.Parameter(torch.zeros(self.heads, self.window))
            self.no_decay = ("rel_bias",)

    def w(self, T):
        """w as [T, T, d] (t, t', c)."""
        d = self.d
        t = torch.arange(T)
        diff = t[:, None] - t[None, :]  # t - t'
        if self.kind == "aft_simple":
            return torch.zeros(T, T, d)
        if self.kind == "aft_full":
            return self.pos_bias[:T, :T, None].expand(T, T, d)
        if self.kind == "aft_local":
            band = (diff.abs() < self.window).to(self.pos_bias.dtype)
            return (self.pos_bias[:T, :T] * band)[:, :, None].expand(T, T, d)
        s = self.window
        o = diff if self.causal else diff + (s - 1) // 2  # tap index of each (t, t')
        inside = (o >= 0) & (o < s)
        taps = self.rel_bias[:, o.clamp(0, s - 1)] * inside  # [heads, T, T]
        return taps.repeat_interleave(d // self.heads, 0).permute(1, 2, 0)

    def forward(self, x, pad, seed):
        B, T, D = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        allow = torch.ones(T, T, dtype=torch.bool)
        if self.causal:
            allow = torch.tril(allow)
        allow = allow[None].expand(B, T, T)
        if pad is not None:
            allow = allow & ~pad[:, None, :]
        allow = allow[..., None]  # [B, t, t', 1]
        any_key = allow.any(2, keepdim=True)  # [B, t, 1, 1]
        logits = k[:, None, :, :] + self.w(T)[None]  # [B, t, t', d]
        logits = logits.masked_fill(~allow, float("-inf")).masked_fill(~any_key, 0.0)
        p = torch.softmax(logits, 2) * any_key
        r = (p * v[:, None, :, :]).sum(2)
        return self.o(torch.sigmoid(q) * r)
