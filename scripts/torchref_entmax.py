"""alpha-entmax attention ("kind": "entmax") for the PyTorch reference
(Correia, Niculae, Martins 2019, "Adaptively Sparse Transformers").

q, k, v, o are d->d linears; heads are contiguous channel groups of
dh = d/n_heads; s = q k^T / sqrt(dh) over allowed keys (j <= i when causal;
keys holding pad_id excluded); p = alpha-entmax(s); out = o(concat_h(p v)).
A query with no allowed key gets zeros before o.

alpha-entmax(z)_j = [(alpha-1) z_j - tau]_+^(1/(alpha-1)) with tau such that
sum_j p_j = 1; alpha = 1 is softmax. Options: alpha (>= 1, default 1.5) and
learn_alpha (then alpha_raw [n_heads], alpha_h = 1 + sigmoid(alpha_raw_h),
initialised to logit(alpha - 1), no weight decay).

This reference is deliberately independent of tokenmix's closed forms: tau is
found by plain bisection (no gradient), and the gradient (with respect to the
scores and to alpha) comes from autograd through one Newton step on
f(tau) = sum_j [(alpha-1) z_j - tau]_+^(1/(alpha-1)) - 1 taken from the
detached root. Because f(tau) = 0 there, the derivative of that step is the
implicit-function derivative -(df/dtheta)/(df/dtau), i.e. the exact
gradient of alpha-entmax, without using Correia et al.'s formulas.
"""
import math

import torch
import torch.nn as nn

BISECT_ITERS = 200  # float64: the bracket (width <= 1) shrinks to rounding


def entmax(s, alpha, allow):
    """alpha-entmax over the last axis of s where allow is True.
    alpha: tensor broadcastable to s[..., :1] (may require grad), all > 1."""
    beta = alpha - 1
    z = torch.where(allow, s, torch.zeros((), dtype=s.dtype))
    anyk = allow.any(-1, keepdim=True)
    zmax = z.masked_fill(~allow, float("-inf")).max(-1, keepdim=True).values
    zmax = torch.where(anyk, zmax, torch.zeros((), dtype=s.dtype))
    n = allow.sum(-1, keepdim=True).clamp(min=1).to(s.dtype)
    with torch.no_grad():
        bz = (beta * z).detach()
        bmax = (beta * zmax).detach()
        lo = bmax - 1
        hi = bmax - n ** (-beta.detach())
        m = 1 / beta.detach()
        for _ in range(BISECT_ITERS):
            mid = (lo + hi) / 2
            u = (bz - mid).clamp(min=0).masked_fill(~allow, 0)
            f = (u ** m).sum(-1, keepdim=True) - 1
            lo = torch.where(f >= 0, mid, lo)
            hi = torch.where(f >= 0, hi, mid)
        tau0 = lo
    # One differentiable Newton step from the (detached) root.
    u = (beta * z - tau0).clamp(min=0).masked_fill(~allow, 0)
    supp = u > 0
    us = torch.where(supp, u, torch.ones((), dtype=s.dtype))
    f = torch.where(supp, us ** (1 / beta), torch.zeros((), dtype=s.dtype)).sum(-1, keepdim=True) - 1
    df = torch.where(supp, us ** (1 / beta - 1) / beta, torch.zeros((), dtype=s.dtype)).sum(-1, keepdim=True)
    tau = tau0 + f / torch.where(df > 0, df, torch.ones((), dtype=s.dtype))
    u = (beta * z - tau).masked_fill(~supp, 0)
    us = torch.where(supp, u, torch.ones((), dtype=s.dtype))
    return torch.where(supp, us ** (1 / beta), torch.zeros((), dtype=s.dtype))


class Entmax(nn.Module):
    def __init__(self, mc):
        super().__init__()
        opts = dict(mc.opts)
        alpha = float(opts.pop("alpha", 1.5))
        learn = opts.pop("learn_alpha", False)
        if opts:
            raise ValueError(f"mixer: unknown option(s) {sorted(opts)} for kind 'entmax'")
        if not isinstance(learn, bool):
            raise ValueError("mixer.learn_alpha: want true or false")
        if alpha < 1:
            raise ValueError("mixer.alpha: must be >= 1")
        if learn and not 1 < alpha < 2:
            raise ValueError("mixer.alpha: with learn_alpha it must lie strictly in (1, 2)")
        self.h, self.causal, self.alpha, self.learn = mc.heads, mc.causal, alpha, learn
        self.q, self.k, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(4))
        if learn:
            self.alpha_raw = nn.Parameter(torch.full((mc.heads,), math.log((alpha - 1) / (2 - alpha))))
            self.no_decay = ("alpha_raw",)

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
        if self.learn:
            alpha = (1 + torch.sigmoid(self.alpha_raw))[None, :, None, None]
        else:
            alpha = torch.tensor(self.alpha, dtype=x.dtype)
        if not self.learn and self.alpha == 1:
            p = torch.softmax(s.masked_fill(~allow, float("-inf")).masked_fill(~any_key, 0.0), -1)
        else:
            p = entmax(s, alpha.expand(B, H, 1, 1) if self.learn else alpha.expand(B, H, T, 1), allow)
        p = p * any_key
        out = (p @ v).transpose(1, 2).reshape(B, T, D)
        return self.o(out)
