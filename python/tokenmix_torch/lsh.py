"""Reformer's LSH attention ("lsh"; Kitaev, Kaiser, Levskaya 2020), the
same hashing, rotations, bucket order and windows as tokenmix's Go kernel
(internal/mixer/lsh/doc.go has the full statement).

Per head (dh = d/n_heads), s = qk(x) is the shared query/key and v = v(x);
q_i = s_i, k_j = s_j/‖s_j‖, z_ij = q_i·k_j/√dh. Per round r and head h a
rotation R [dh, NB/2] (rng.lsh_normals of the pass seed and stream
layer<<40 | r<<24 | h, row-major) hashes token i to
argmax([s_i·R ; −s_i·R]) (the first maximum), NB = 2·max(1, ⌊T/(2·bucket_size)⌋).
Non-pad tokens are sorted by (bucket, position); each bucket's run is cut
into chunks of bucket_size; a query sees its chunk and the previous chunk of
its bucket (bidirectional: a bucket's first chunk wraps to its last when
the bucket has two chunks or more). Causal: keys j ≤ i. A token attends to
itself only when it has no other key in any round. A key found in N_ij
rounds has log N_ij subtracted in each, and the rounds combine as
out_i = Σ_r exp(lse_r(i) − logsumexp_r lse_r(i))·o_r(i); out = o(·).

Memory: per round the windows are [B·H, chunks, bucket_size, 2·bucket_size]
scores, chunks ≤ T/bucket_size + NB; nothing is T×T.
"""
import math

import torch
import torch.nn as nn

from . import rng
from .attention import rope, rope_option
from .options import Options

_ROTATIONS = {}


def rotation(seed, layer, r, h, dh, nb):
    """The float64 rotation [dh, NB/2] of round r, head h of block layer."""
    key = (seed, layer, r, h, dh, nb)
    R = _ROTATIONS.get(key)
    if R is None:
        if len(_ROTATIONS) > 4096:
            _ROTATIONS.clear()
        z = rng.lsh_normals(seed, rng.lsh_stream(layer, r, h), dh * (nb // 2))
        R = _ROTATIONS[key] = torch.from_numpy(z).reshape(dh, nb // 2)
    return R


class LSH(nn.Module):
    def __init__(self, mc):
        super().__init__()
        o = Options(mc.kind, mc.opts)
        self.bucket_size = o.int("bucket_size", 64)
        self.n_hashes = o.int("n_hashes", 4)
        self.rope_base = rope_option(o, mc.d, mc.heads, False)
        o.done()
        if self.bucket_size < 2:
            raise ValueError(f"mixer.bucket_size: want an integer ≥ 2, got {self.bucket_size}")
        if not 1 <= self.n_hashes <= 64:
            raise ValueError(f"mixer.n_hashes: want an integer in [1,64], got {self.n_hashes}")
        if mc.d % mc.heads:
            raise ValueError(f"n_heads: must divide d_model ({mc.d} % {mc.heads} != 0)")
        self.h, self.causal, self.layer = mc.heads, mc.causal, mc.layer
        self.qk, self.v, self.o = (nn.Linear(mc.d, mc.d) for _ in range(3))

    def n_buckets(self, T):
        return 2 * max(1, T // (2 * self.bucket_size))

    def buckets(self, s, pad, seed):
        """Buckets [R, B·H, T] (−1 for padding) of s [B, H, T, dh]."""
        B, H, T, dh = s.shape
        nb = self.n_buckets(T)
        dt = s.dtype if s.dtype in (torch.float32, torch.float64) else torch.float32
        x = s.detach().to(dt)
        out = []
        for r in range(self.n_hashes):
            R = torch.stack([rotation(seed, self.layer, r, h, dh, nb) for h in range(H)]).to(dt).to(s.device)
            p = x @ R[None]  # [B, H, T, NB/2]
            b = torch.cat([p, -p], -1).argmax(-1)
            if pad is not None:
                b = b.masked_fill(pad[:, None, :], -1)
            out.append(b.reshape(B * H, T))
        return torch.stack(out)

    def tables(self, bk, T):
        """Chunk tables of one round from buckets bk [N, T] (N = B·H):
        tok [N, C, cb] (token or −1), prev [N, C] (chunk or −1), chunk_of
        and prev_of [N, T] (−1 for padding)."""
        N, dev = bk.shape[0], bk.device
        nb, bs = self.n_buckets(T), self.bucket_size
        cb, C = min(bs, T), T // bs + nb
        t = torch.arange(T, device=dev).expand(N, T)
        valid = bk >= 0
        key = torch.where(valid, bk * T + t, nb * T + t)
        order = key.argsort(-1)
        sb = bk.gather(1, order)  # sorted buckets (−1 at the end)
        sv = sb >= 0
        sbc = sb.clamp(min=0)
        cnt = torch.zeros(N, nb, dtype=torch.long, device=dev).scatter_add_(1, sbc, sv.long())
        nch = (cnt + bs - 1) // bs
        bstart = cnt.cumsum(1) - cnt
        cstart = nch.cumsum(1) - nch
        a = torch.arange(T, device=dev).expand(N, T)
        rank = a - bstart.gather(1, sbc)
        chunk = cstart.gather(1, sbc) + rank // bs
        slot = rank % bs
        first = rank // bs == 0
        last = cstart.gather(1, sbc) + nch.gather(1, sbc) - 1
        if self.causal:
            wrap = torch.full_like(chunk, -1)
        else:
            wrap = torch.where(nch.gather(1, sbc) >= 2, last, torch.full_like(last, -1))
        prevc = torch.where(first, wrap, chunk - 1)
        dump = C * cb  # invalid rows land in a spare slot
        flat = torch.where(sv, chunk * cb + slot, torch.full_like(chunk, dump))
        tok = torch.full((N, C * cb + 1), -1, dtype=torch.long, device=dev).scatter_(1, flat, order)
        tok = tok[:, :-1].reshape(N, C, cb)
        pflat = torch.where(sv, chunk, torch.full_like(chunk, C))
        prev = torch.full((N, C + 1), -1, dtype=torch.long, device=dev).scatter_(1, pflat, prevc)[:, :-1]
        chunk_of = torch.full((N, T), -1, dtype=torch.long, device=dev).scatter_(
            1, order, torch.where(sv, chunk, torch.full_like(chunk, -1)))
        prev_of = torch.full((N, T), -1, dtype=torch.long, device=dev).scatter_(
            1, order, torch.where(sv, prevc, torch.full_like(prevc, -1)))
        return tok, prev, chunk_of, prev_of

    def forward(self, x, pad, seed):
        B, T, D = x.shape
        H, dh, R = self.h, D // self.h, self.n_hashes
        N = B * H
        s = self.qk(x).view(B, T, H, dh).transpose(1, 2)  # [B, H, T, dh]
        if self.rope_base is not None:
            s = rope(s, self.rope_base)  # before hashing
        v = self.v(x).view(B, T, H, dh).transpose(1, 2)
        bks = self.buckets(s, pad, seed)
        s, v = s.reshape(N, T, dh), v.reshape(N, T, dh)
        norm = s.norm(dim=-1, keepdim=True)
        k = s / torch.where(norm > 0, norm, torch.ones_like(norm))
        tabs = [self.tables(bks[r], T) for r in range(R)]
        chunk_of = torch.stack([t[2] for t in tabs], -1)  # [N, T, R]
        prev_of = torch.stack([t[3] for t in tabs], -1)
        ar = torch.arange(N, device=x.device)[:, None, None]
        rounds = []
        other = torch.zeros(N, T + 1, dtype=torch.bool, device=x.device)
        for tok, prev, _, _ in tabs:
            C, cb = tok.shape[1], tok.shape[2]
            ptok = torch.where(prev[..., None] >= 0, tok.gather(1, prev.clamp(min=0)[..., None].expand(N, C, cb)),
                               torch.full_like(tok, -1))
            keys = torch.cat([ptok, tok], -1)  # [N, C, 2cb]
            qi, kj = tok[..., :, None], keys[..., None, :]
            allow = (qi >= 0) & (kj >= 0)
            if self.causal:
                allow = allow & (kj <= qi)
            nonself = (allow & (kj != qi)).any(-1)  # [N, C, cb]
            other.scatter_(1, torch.where(tok >= 0, tok, torch.full_like(tok, T)).reshape(N, -1),
                           other.gather(1, tok.clamp(min=0).reshape(N, -1)) | nonself.reshape(N, -1))
            rounds.append((tok, keys, allow))
        other = other[:, :T]
        outs, lses = [], []
        for tok, keys, allow in rounds:
            qi, kj = tok[..., :, None], keys[..., None, :]
            selfok = ~other.gather(1, tok.clamp(min=0).reshape(N, -1)).reshape(tok.shape)
            allow = allow & ((kj != qi) | selfok[..., None])
            qv = s[ar, tok.clamp(min=0)]  # [N, C, cb, dh]
            kv = k[ar, keys.clamp(min=0)]  # [N, C, 2cb, dh]
            vv = v[ar, keys.clamp(min=0)]
            z = qv @ kv.transpose(-1, -2) / math.sqrt(dh)
            if R > 1:
                ci = chunk_of[ar, tok.clamp(min=0)]  # [N, C, cb, R]
                pi = prev_of[ar, tok.clamp(min=0)]
                cj = chunk_of[ar, keys.clamp(min=0)]  # [N, C, 2cb, R]
                cjx = cj[:, :, None]
                n = ((cjx == ci[:, :, :, None]) | ((cjx == pi[:, :, :, None]) & (pi[:, :, :, None] >= 0))).sum(-1)
                z = z - torch.log(n.clamp(min=1).to(z.dtype))
            anyk = allow.any(-1, keepdim=True)
            zs = z.masked_fill(~allow, float("-inf")).masked_fill(~anyk, 0.0)
            p = torch.softmax(zs, -1) * anyk
            o = p @ vv  # [N, C, cb, dh]
            lse = torch.logsumexp(zs, -1).masked_fill(~anyk[..., 0], float("-inf"))
            idx = torch.where(tok >= 0, tok, torch.full_like(tok, T)).reshape(N, -1)
            ot = torch.zeros(N, T + 1, dh, dtype=o.dtype, device=o.device).scatter(
                1, idx[..., None].expand(-1, -1, dh), o.reshape(N, -1, dh))[:, :T]
            lt = torch.full((N, T + 1), float("-inf"), dtype=o.dtype, device=o.device).scatter(
                1, idx, lse.reshape(N, -1))[:, :T]
            outs.append(ot)
            lses.append(lt)
        lse = torch.stack(lses)  # [R, N, T]
        fin = torch.isfinite(lse)
        anyr = fin.any(0, keepdim=True)
        lse2 = lse.masked_fill(~fin, float("-inf")).masked_fill(~anyr, 0.0)
        L = torch.logsumexp(lse2, 0, keepdim=True)
        w = torch.exp(lse2 - L) * (fin & anyr)
        out = (w[..., None] * torch.stack(outs)).sum(0)  # [N, T, dh]
        out = out.view(B, H, T, dh).transpose(1, 2).reshape(B, T, D)
        return self.o(out)
