"""Attention Free Transformer mixers (Zhai et al. 2021): aft_full,
aft_simple, aft_local and aft_conv. q, k, v, o are d→d linears; per channel c

    Y[t,c] = σ(Q[t,c]) · Σ_t' exp(K[t',c] + w[t,t'])·V[t',c] / Σ_t' exp(K[t',c] + w[t,t'])
    out    = o(Y)

over the allowed t' (t' ≤ t when causal, never a key holding pad_id); a row
with none gets Y = 0. w is

    aft_full    pos_bias[t,t']                          pos_bias [max_len,max_len]
    aft_simple  0
    aft_local   pos_bias[t,t'] if |t−t'| < window else 0
    aft_conv    rel_bias[h(c), o] if t−t' = δ(o) else 0, rel_bias [heads,window],
                δ(o) = o (causal) or o − (window−1)/2 (bidirectional, window odd),
                h(c) = ⌊c/(d/heads)⌋

and with the option "distant": false (aft_local, aft_conv) −∞ instead of 0
beyond the window: a sliding window.

Computed as the paper writes it, never T×T×d: with E = exp(K − max K)
(masked) the sums are totals, or prefix sums when causal (aft_simple: a
scan over CHUNK-row chunks with a running maximum), and the w ≠ 0 entries are
a banded correction: exp(w − mw)·E inside the band plus c0 = exp(−mw) times
the sums for the rest (mw the row's largest allowed w). aft_full and
aft_local apply the band per block of ROW_BLOCK queries as a matrix
product (under checkpoint when gradients are needed and there are several
blocks), aft_conv as one shifted product per tap.
"""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from .options import Options

DEFAULT_WINDOW = {"aft_local": 32, "aft_conv": 31}
ROW_BLOCK = 256
CHUNK = 128


class AFT(nn.Module):
    def __init__(self, mc):
        super().__init__()
        kind = mc.kind
        o = Options(kind, mc.opts)
        self.kind, self.causal, self.d = kind, mc.causal, mc.d
        self.window = o.int("window", DEFAULT_WINDOW[kind]) if kind in DEFAULT_WINDOW else None
        self.heads = o.int("heads", mc.heads) if kind == "aft_conv" else 1
        self.distant = o.bool("distant", True) if kind in DEFAULT_WINDOW else False
        o.done()
        if self.window is not None and not 1 <= self.window <= 1 << 30:
            raise ValueError(f"mixer.window: want an integer in [1, 2^30], got {self.window}")
        if kind == "aft_conv":
            if self.heads < 1 or mc.d % self.heads:
                raise ValueError(f"mixer.heads: must divide d_model ({mc.d}), got {self.heads}")
            if not mc.causal and self.window % 2 == 0:
                raise ValueError(f"mixer.window: must be odd when bidirectional, got {self.window}")
        self.q, self.k, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(4))
        self.no_decay = ()
        if kind in ("aft_full", "aft_local"):
            self.pos_bias = nn.Parameter(torch.zeros(mc.max_len, mc.max_len))
            self.no_decay = ("pos_bias",)
        elif kind == "aft_conv":
            self.rel_bias = nn.Parameter(torch.zeros(self.heads, self.window))
            self.no_decay = ("rel_bias",)

    def forward(self, x, pad, seed):
        B, T, D = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        keep = torch.ones(B, T, 1, dtype=torch.bool, device=x.device) if pad is None else ~pad[..., None]
        if self.kind == "aft_simple" and self.causal:
            num, den = simple_scan(k, v, keep)
        else:
            # E = exp(K − m), m the per-channel maximum over the allowed keys
            # (a shift that cancels in the ratio; detached).
            m = k.detach().masked_fill(~keep, float("-inf")).amax(1, keepdim=True)
            m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
            e = torch.exp(k - m) * keep
            ev = e * v
            if self.kind == "aft_simple":
                num, den = ev.sum(1, keepdim=True).expand(B, T, D), e.sum(1, keepdim=True).expand(B, T, D)
            elif self.kind == "aft_conv":
                num, den = self.conv(ev, e, keep)
            else:
                num, den = self.banded(ev, e, keep)
        pos = den > 0
        y = torch.where(pos, num / torch.where(pos, den, torch.ones_like(den)), torch.zeros_like(num))
        return self.o(torch.sigmoid(q) * y)

    def sums(self, ev, e, keep):
        """Totals (bidirectional) or prefix sums (causal) of ev, e and the
        allowed-key count, over time."""
        cnt = keep.to(ev.dtype)
        if self.causal:
            return ev.cumsum(1), e.cumsum(1), cnt.cumsum(1)
        B, T, D = ev.shape
        return (ev.sum(1, keepdim=True).expand(B, T, D), e.sum(1, keepdim=True).expand(B, T, D),
                cnt.sum(1, keepdim=True).expand(B, T, 1))

    def banded(self, ev, e, keep):
        """aft_full and aft_local: per block of queries, the band of w over
        the block's key span as a matrix product."""
        B, T, D = ev.shape
        s = T if self.kind == "aft_full" else self.window
        sev, se, scnt = self.sums(ev, e, keep)
        w = self.pos_bias[:T, :T]
        grad = torch.is_grad_enabled() and (ev.requires_grad or w.requires_grad)
        nums, dens = [], []
        for i0 in range(0, T, ROW_BLOCK):
            i1 = min(T, i0 + ROW_BLOCK)
            k0, k1 = max(0, i0 - s + 1), min(i1 if self.causal else T, i1 + s - 1)
            args = (ev[:, k0:k1], e[:, k0:k1], w[i0:i1, k0:k1], sev[:, i0:i1], se[:, i0:i1])

            def blk(evk, ek, wb, sevq, seq, i0=i0, i1=i1, k0=k0, k1=k1):
                t = torch.arange(i0, i1, device=ev.device)[:, None]
                j = torch.arange(k0, k1, device=ev.device)[None, :]
                band = (t - j).abs() < s
                if self.causal:
                    band = band & (j <= t)
                allow = band[None] & keep[:, k0:k1, 0][:, None, :]  # [B, bq, span]
                nband = allow.sum(-1, keepdim=True).to(ev.dtype)
                distant = (scnt[:, i0:i1] - nband > 0.5) & self.distant  # [B, bq, 1]
                wd = wb.detach()[None].expand_as(allow)
                mw = wd.masked_fill(~allow, float("-inf")).amax(-1, keepdim=True)
                mw = torch.where(distant, mw.clamp(min=0), mw)
                mw = torch.where(torch.isfinite(mw), mw, torch.zeros_like(mw))
                c0 = torch.where(distant, torch.exp(-mw), torch.zeros_like(mw))
                coef = (torch.exp(wb[None] - mw) - c0) * allow
                return c0 * sevq + coef @ evk, c0 * seq + coef @ ek

            n_, d_ = checkpoint(blk, *args, use_reentrant=False) if grad and T > ROW_BLOCK else blk(*args)
            nums.append(n_)
            dens.append(d_)
        return torch.cat(nums, 1), torch.cat(dens, 1)

    def conv(self, ev, e, keep):
        """aft_conv: the sums plus one shifted product per tap."""
        B, T, D = ev.shape
        H, s = self.heads, self.window
        sev, se, scnt = self.sums(ev, e, keep)
        off = 0 if self.causal else (s - 1) // 2
        t = torch.arange(T, device=ev.device)
        kp = keep[..., 0]
        allow = []  # per tap o: [B, T], key t − δ(o) exists and is allowed
        for o in range(s):
            src = t - (o - off)
            ok = (src >= 0) & (src < T)
            allow.append(ok[None] & kp.gather(1, src.clamp(0, T - 1)[None].expand(B, T)))
        allow = torch.stack(allow, -1)  # [B, T, s]
        nband = allow.sum(-1, keepdim=True).to(ev.dtype)
        distant = (scnt - nband > 0.5) & self.distant  # [B, T, 1]
        rel = self.rel_bias
        rd = rel.detach()
        mw = rd[None, None].masked_fill(~allow[:, :, None], float("-inf")).amax(-1)  # [B, T, H]
        mw = torch.where(distant, mw.clamp(min=0), mw)
        mw = torch.where(torch.isfinite(mw), mw, torch.zeros_like(mw))
        c0 = torch.where(distant, torch.exp(-mw), torch.zeros_like(mw))  # [B, T, H]
        rep = D // H
        c0c = c0.repeat_interleave(rep, -1)
        num, den = c0c * sev, c0c * se
        for o in range(s):
            dlt = o - off
            if abs(dlt) >= T:
                continue
            coef = (torch.exp(rel[:, o][None, None] - mw) - c0) * allow[:, :, o:o + 1]  # [B, T, H]
            coef = coef.repeat_interleave(rep, -1)
            num = num + coef * shift(ev, dlt)
            den = den + coef * shift(e, dlt)
        return num, den


def shift(x, dlt):
    """x[:, t − dlt] along time, zero outside [0, T)."""
    if dlt == 0:
        return x
    z = torch.zeros_like(x[:, :abs(dlt)])
    if dlt > 0:
        return torch.cat([z, x[:, :-dlt]], 1)
    return torch.cat([x[:, -dlt:], z], 1)


def simple_scan(k, v, keep):
    """Causal aft_simple: prefix sums of exp(K)⊙V and exp(K) over chunks of
    CHUNK rows with a running per-channel maximum (each chunk rescales the
    carried sums to its own maximum)."""
    B, T, D = k.shape
    kd = k.detach().masked_fill(~keep, float("-inf"))
    M = torch.full((B, 1, D), float("-inf"), dtype=k.dtype, device=k.device)
    cn = torch.zeros(B, 1, D, dtype=k.dtype, device=k.device)
    cd = torch.zeros_like(cn)
    nums, dens = [], []
    for t0 in range(0, T, CHUNK):
        t1 = min(T, t0 + CHUNK)
        m = torch.maximum(M, kd[:, t0:t1].amax(1, keepdim=True))
        ms = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        scale = torch.where(torch.isfinite(M), torch.exp(M - ms), torch.zeros_like(ms))
        e = torch.exp(k[:, t0:t1] - ms) * keep[:, t0:t1]
        n_ = cn * scale + (e * v[:, t0:t1]).cumsum(1)
        d_ = cd * scale + e.cumsum(1)
        nums.append(n_)
        dens.append(d_)
        cn, cd, M = n_[:, -1:], d_[:, -1:], m
    return torch.cat(nums, 1), torch.cat(dens, 1)
