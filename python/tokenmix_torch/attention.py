"""Multi-head attention kinds: full, strided, fixed, topk and entmax.

All share q, k, v, o (d→d linears, o the residual projection) and heads as
contiguous channel groups of dh = d/n_heads. With RoPE (option rope), q and
k are rotated right after their projections (see rope). Per head, with
s_ij = q_i·k_j/√dh (minus m_h·|i−j| with ALiBi, m_h = 2^(−8(h+1)/n_heads)),
p_i = rule(s_i over the allowed keys A(i)) and out = o(concat_h p·v). A(i)
is j ≤ i when causal, never a key holding pad_id, and each kind's pattern;
a query with no allowed key gets zeros before o.

Rules: softmax (full, strided, fixed), top-k (softmax over the k highest
allowed scores; ties at the k-th value are kept) and α-entmax.

Memory: queries are processed in row blocks of ROW_BLOCK; a block's scores
and mask are [B, H, ROW_BLOCK, T'] (T' = keys up to the block's last query
when causal) and, when gradients are needed and there is more than one
block, each block runs under torch.utils.checkpoint, so its probabilities
are recomputed in backward instead of kept. Nothing T×T is ever built for
T > ROW_BLOCK. With torch.nn.functional.scaled_dot_product_attention
(PyTorch ≥ 2.0) the softmax kinds run through it, per row block with the
block's mask, or over the whole sequence with is_causal when there is no
mask to apply; on older PyTorch the plain row-block code runs.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .options import Options

ROW_BLOCK = 256
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
BISECT_ITERS = 80  # float64 bisection of the entmax threshold, then one Newton step


def alibi_slopes(H):
    """ALiBi slopes m_h = 2^(−8(h+1)/H)."""
    return [2.0 ** (-8.0 * (h + 1) / H) for h in range(H)]


def softmax_rule(s, allow):
    any_key = allow.any(-1, keepdim=True)
    s = s.masked_fill(~allow, float("-inf")).masked_fill(~any_key, 0.0)
    return torch.softmax(s, -1) * any_key


def topk_rule(k):
    def rule(s, allow):
        any_key = allow.any(-1, keepdim=True)
        s = s.masked_fill(~allow, float("-inf"))
        kth = s.topk(min(k, s.shape[-1]), dim=-1).values[..., -1:]  # −inf when ≤ k allowed
        keep = allow & (s >= kth)
        s = s.masked_fill(~keep, float("-inf")).masked_fill(~any_key, 0.0)
        return torch.softmax(s, -1) * any_key
    return rule


def entmax(s, alpha, allow):
    """α-entmax over the last axis of s where allow is True; alpha is a
    tensor broadcastable to s[..., :1], every entry > 1 (it may require grad).

    τ is found by bisection in float64 without gradient; the gradient (with
    respect to the scores and α) comes from one Newton step on
    f(τ) = Σ_j [β·z_j − τ]₊^(1/β) − 1 taken from the detached root, whose
    derivative there is the implicit-function derivative −(∂f/∂θ)/(∂f/∂τ),
    i.e. the exact gradient of α-entmax."""
    beta = alpha - 1
    zero = torch.zeros((), dtype=s.dtype, device=s.device)
    one = torch.ones((), dtype=s.dtype, device=s.device)
    z = torch.where(allow, s, zero)
    anyk = allow.any(-1, keepdim=True)
    with torch.no_grad():
        z64, b64 = z.detach().double(), beta.detach().double().expand(*s.shape[:-1], 1)
        zmax = z64.masked_fill(~allow, float("-inf")).max(-1, keepdim=True).values
        zmax = torch.where(anyk, zmax, torch.zeros_like(zmax))
        n = allow.sum(-1, keepdim=True).clamp(min=1).double()
        bz, bmax = b64 * z64, b64 * zmax
        lo, hi = bmax - 1, bmax - n ** (-b64)
        m = 1 / b64
        for _ in range(BISECT_ITERS):
            mid = (lo + hi) / 2
            u = (bz - mid).clamp(min=0).masked_fill(~allow, 0)
            f = (u ** m).sum(-1, keepdim=True) - 1
            ge = f >= 0
            lo, hi = torch.where(ge, mid, lo), torch.where(ge, hi, mid)
        tau0 = lo.to(s.dtype)
    u = (beta * z - tau0).clamp(min=0).masked_fill(~allow, 0)
    supp = u > 0
    us = torch.where(supp, u, one)
    f = torch.where(supp, us ** (1 / beta), zero).sum(-1, keepdim=True) - 1
    df = torch.where(supp, us ** (1 / beta - 1) / beta, zero).sum(-1, keepdim=True)
    tau = tau0 + f / torch.where(df > 0, df, one)
    u = (beta * z - tau).masked_fill(~supp, 0)
    us = torch.where(supp, u, one)
    return torch.where(supp, us ** (1 / beta), zero)


def rope_option(o, d, heads, alibi):
    """The base of RoPE from options rope and rope_base (default 10000), or
    None without rope; the same refusals as Go's attn.RopeOption."""
    on = o.bool("rope", False)
    has_base = o.has("rope_base")
    base = o.float("rope_base", 10000.0)
    if has_base and not on:
        raise ValueError("mixer.rope_base: is set but rope is not true")
    if not on:
        return None
    if not (base > 0 and math.isfinite(base)):
        raise ValueError(f"mixer.rope_base: must be a positive number, got {base}")
    if alibi:
        raise ValueError("mixer.rope: cannot be combined with alibi: choose one position scheme")
    if heads > 0 and d % heads == 0 and (d // heads) % 2:
        raise ValueError(f"mixer.rope: needs an even head width (d_model/n_heads = {d // heads})")
    return base


def rope(x, base):
    """Rotary position embedding (Su et al. 2021) of x [..., T, dh], the
    "rotate half" convention of GPT-NeoX and LLaMA: dimension a < dh/2 pairs
    with a + dh/2, and at position p (the index along T) the pair turns by p·θ_a,
    θ_a = base^(−2a/dh). The angles, cosines and sines are float64."""
    T, dh = x.shape[-2], x.shape[-1]
    half = dh // 2
    a = torch.arange(half, dtype=torch.float64, device=x.device)
    theta = torch.pow(torch.tensor(base, dtype=torch.float64), -2 * a / dh)
    ang = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * theta[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x0, x1 = x[..., :half], x[..., half:]
    return torch.cat([x0 * cos - x1 * sin, x1 * cos + x0 * sin], -1)


class Attention(nn.Module):
    """The shared q, k, v, o attention; subclasses set self.rule and
    implement pattern(i0, i1, tk) (a bool [H or 1, bq, tk] mask of allowed
    pairs before causality and padding, or None for every pair)."""

    softmax = True  # the rule is a plain masked softmax (SDPA can run it)

    def __init__(self, mc, o):
        super().__init__()
        self.alibi = o.bool("alibi", False) if self.has_alibi else False
        self.h, self.causal, self.d = mc.heads, mc.causal, mc.d
        if mc.d % mc.heads:
            raise ValueError(f"n_heads: must divide d_model ({mc.d} % {mc.heads} != 0)")
        self.rope_base = rope_option(o, mc.d, mc.heads, self.alibi)
        self.q, self.k, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(4))

    has_alibi = False

    def pattern(self, i0, i1, tk, device):
        return None

    def rule(self, s, allow):
        return softmax_rule(s, allow)

    def mask(self, i0, i1, tk, pad, device):
        """allow [B or 1, H or 1, bq, tk] for queries [i0, i1) and keys [0, tk)."""
        i = torch.arange(i0, i1, device=device)[:, None]
        j = torch.arange(tk, device=device)[None, :]
        allow = torch.ones(i1 - i0, tk, dtype=torch.bool, device=device)
        if self.causal:
            allow = j <= i
        pat = self.pattern(i0, i1, tk, device)
        allow = allow[None, None] if pat is None else (allow[None] & pat)[None]
        if pad is not None:
            allow = allow & ~pad[:, None, None, :tk]
        return allow

    def bias(self, i0, i1, tk, dtype, device):
        if not self.alibi:
            return None
        m = torch.tensor(alibi_slopes(self.h), dtype=dtype, device=device)
        i = torch.arange(i0, i1, device=device, dtype=dtype)[:, None]
        j = torch.arange(tk, device=device, dtype=dtype)[None, :]
        return -m[:, None, None] * (i - j).abs()

    def block(self, qb, k, v, pad, i0, i1):
        tk = k.shape[2]
        allow = self.mask(i0, i1, tk, pad, qb.device)
        bias = self.bias(i0, i1, tk, qb.dtype, qb.device)
        if self.softmax and HAS_SDPA:
            return sdpa_block(qb, k, v, allow, bias)
        s = qb @ k.transpose(-1, -2) / math.sqrt(qb.shape[-1])
        if bias is not None:
            s = s + bias
        return self.rule(s, allow) @ v

    def forward(self, x, pad, seed):
        B, T, D = x.shape
        H, dh = self.h, D // self.h
        q, k, v = (f(x).view(B, T, H, dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        if self.rope_base is not None:
            q, k = rope(q, self.rope_base), rope(k, self.rope_base)
        if (self.softmax and HAS_SDPA and pad is None and not self.alibi
                and self.pattern(0, 1, 1, x.device) is None):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        else:
            out = row_blocks(self.block, q, k, v, pad, self.causal)
        return self.o(out.transpose(1, 2).reshape(B, T, D))


def sdpa_block(qb, k, v, allow, bias):
    """One row block through scaled_dot_product_attention: a float mask (0
    or −inf, plus the bias); rows with no allowed key attend to every key
    and are zeroed after, since SDPA would give NaN for them."""
    any_key = allow.any(-1, keepdim=True)
    m = torch.zeros(allow.shape, dtype=qb.dtype, device=qb.device)
    m = m.masked_fill(~allow & any_key, float("-inf"))
    if bias is not None:
        m = m + bias
    return F.scaled_dot_product_attention(qb, k, v, attn_mask=m) * any_key


def row_blocks(fn, q, k, v, pad, causal, block=None):
    """fn(qb, k, v, pad, i0, i1) over query blocks [i0, i1) of ROW_BLOCK rows
    (read at call time; block overrides it), keys [0, i1) when causal, each
    under checkpoint when gradients are needed and there is more than one
    block."""
    block = block or ROW_BLOCK
    T = q.shape[2]
    if T <= block:
        return fn(q, k, v, pad, 0, T)
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    outs = []
    for i0 in range(0, T, block):
        i1 = min(T, i0 + block)
        tk = i1 if causal else T
        args = (q[:, :, i0:i1], k[:, :, :tk], v[:, :, :tk])
        run = lambda qb, kb, vb, i0=i0, i1=i1: fn(qb, kb, vb, pad, i0, i1)  # noqa: E731
        outs.append(checkpoint(run, *args, use_reentrant=False) if grad else run(*args))
    return torch.cat(outs, 2)


class Full(Attention):
    """Full attention ("full", Vaswani et al. 2017); options alibi (Press et
    al. 2022) or rope with rope_base (Su et al. 2021)."""
    has_alibi = True

    def __init__(self, mc):
        o = Options(mc.kind, mc.opts)
        super().__init__(mc, o)
        o.done()


class Sparse(Attention):
    """The Sparse Transformer's factorized patterns ("strided", "fixed";
    Child et al. 2019), with l = block and c = summary:

        strided  A1: |i − j| ≤ l        A2: (i − j) mod l = 0
        fixed    A1: ⌊j/l⌋ = ⌊i/l⌋     A2: j mod l ≥ l − c

    (both with j ≤ i when causal), and j = i always. combine "merge" gives
    every head A1 ∪ A2, "heads" heads below n_heads/2 A1 and the others A2,
    "interleave" even layers A1 and odd layers A2. Each row block builds its
    [H, ROW_BLOCK, T'] mask from these rules: no mask is ever T×T beyond
    ROW_BLOCK."""
    has_alibi = True

    def __init__(self, mc):
        o = Options(mc.kind, mc.opts)
        self.fixed = mc.kind == "fixed"
        if not o.has("block"):
            raise ValueError("mixer.block: required: the stride l (about √max_len)")
        self.l = o.int("block")
        if self.l < 1:
            raise ValueError(f"mixer.block: must be ≥ 1, got {self.l}")
        if self.fixed:
            if not o.has("summary"):
                raise ValueError("mixer.summary: required for kind fixed (1 ≤ summary ≤ block)")
            self.c = o.int("summary")
            if not 1 <= self.c <= self.l:
                raise ValueError(f"mixer.summary: must satisfy 1 ≤ summary ≤ block ({self.l}), got {self.c}")
        elif o.has("summary"):
            raise ValueError('mixer.summary: only kind "fixed" has summary positions')
        self.combine = o.str("combine", "merge")
        if self.combine not in ("heads", "merge", "interleave"):
            raise ValueError(f'mixer.combine: want "heads", "merge" or "interleave", got {self.combine!r}')
        if self.combine == "heads" and mc.heads % 2:
            raise ValueError(f'mixer.combine: "heads" needs an even n_heads, got {mc.heads}')
        super().__init__(mc, o)
        o.done()
        H = mc.heads
        if self.combine == "heads":
            self.sets = [1 if h < H // 2 else 2 for h in range(H)]
        elif self.combine == "interleave":
            self.sets = [1 if mc.layer % 2 == 0 else 2] * H
        else:
            self.sets = [3] * H

    def pattern(self, i0, i1, tk, device):
        i = torch.arange(i0, i1, device=device)[:, None]
        j = torch.arange(tk, device=device)[None, :]
        l = self.l
        if self.fixed:
            a1, a2 = (j // l) == (i // l), (j % l) >= l - self.c
        else:
            a1, a2 = (i - j).abs() <= l, (i - j) % l == 0
        a1 = a1.expand(i1 - i0, tk)
        a2 = a2.expand(i1 - i0, tk)
        by = {1: a1, 2: a2, 3: a1 | a2}
        return torch.stack([by[s] for s in self.sets]) | (i == j)[None]


class TopK(Attention):
    """Top-k attention ("topk", Zhao et al. 2019): softmax over each query's k
    highest allowed scores (every score equal to the k-th is kept)."""
    softmax = False

    def __init__(self, mc):
        o = Options(mc.kind, mc.opts)
        self.topk = o.int("k", 8)
        if self.topk < 1:
            raise ValueError(f"mixer.k: want an integer ≥ 1, got {self.topk}")
        super().__init__(mc, o)
        o.done()

    def rule(self, s, allow):
        return topk_rule(self.topk)(s, allow)


class Entmax(Attention):
    """α-entmax attention ("entmax", Correia et al. 2019): options alpha (≥ 1,
    default 1.5; 1 is softmax) and learn_alpha (alpha_raw [n_heads],
    α_h = 1 + sigmoid(alpha_raw_h), initialised to logit(alpha − 1), no
    weight decay)."""
    softmax = False

    def __init__(self, mc):
        o = Options(mc.kind, mc.opts)
        self.alpha = o.float("alpha", 1.5)
        self.learn = o.bool("learn_alpha", False)
        if self.alpha < 1:
            raise ValueError(f"mixer.alpha: must be ≥ 1, got {self.alpha}")
        if self.learn and not 1 < self.alpha < 2:
            raise ValueError("mixer.alpha: with learn_alpha it must lie strictly in (1, 2)")
        super().__init__(mc, o)
        o.done()
        if self.learn:
            a = self.alpha
            self.alpha_raw = nn.Parameter(torch.full((mc.heads,), math.log((a - 1) / (2 - a))))
            self.no_decay = ("alpha_raw",)

    def rule(self, s, allow):
        allow = allow.expand(s.shape)
        if not self.learn and self.alpha == 1:
            return softmax_rule(s, allow)
        if self.learn:
            alpha = (1 + torch.sigmoid(self.alpha_raw)).to(s.dtype)[None, :, None, None]
        else:
            alpha = torch.tensor(self.alpha, dtype=s.dtype, device=s.device)
        p = entmax(s, alpha.expand(*s.shape[:-1], 1), allow)
        return p * allow.any(-1, keepdim=True)
