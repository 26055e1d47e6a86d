"""The tokenmix Transformer (docs/model.md) as a torch.nn.Module.

Forward (pre-LN; B batch, T time, d = d_model):

    x = embed[tokens] + pos[0:T]
    for each block i:  x = x + mixer_i(LN1_i(x));  x = x + FF_i(LN2_i(x))
    h = LN_f(x)
    lm:       logits = head(h)                              [B, T, vocab_size]
    tag:      logits = head(h)                              [B, T, n_classes]
    classify: logits = head(mean of h over non-pad t)       [B, n_classes]
              (pool "first": head(h[:, 0]))

LayerNorm eps 1e-5; FF(x) = fc2(GELU_tanh(fc1(x))); linears y = x·Wᵀ + b.
Parameter names are tokenmix's weight names, so state_dict() is a tokenmix
weights file. Options: "checkpoint" runs each block under
torch.utils.checkpoint; "ff_chunks": k runs the feed-forward over the B·T
rows in k chunks, each recomputed in backward; "reversible" uses RevNet
couplings (y1 = x1 + mixer(LN1(x2)), y2 = x2 + FF(LN2(y1)), x1 = x2 =
embeddings, LN_f of (x1 + x2)/2) and, when gradients are needed, keeps only
the last two streams and reconstructs each block's inputs in backward.

Random mixers (lsh) get the pass seed rng.pass_seed(model.seed, model.step,
layer): set model.step to the training step as tokenmix does. With
"dropout": p, a module in training mode drops elements of each block's two
branch outputs with tokenmix's masks (rng.dropout_keep), so a training
step's gradients match tokenmix's; in eval mode nothing is dropped.
"""
import copy
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from . import config as cfgmod
from . import rng, st
from .aft import AFT
from .attention import Entmax, Full, Sparse, TopK
from .fnet import FNet
from .lsh import LSH
from .options import MixerConfig

# Every mixer kind: kind -> constructor(MixerConfig).
MIXERS = {
    "full": Full, "strided": Sparse, "fixed": Sparse, "entmax": Entmax, "topk": TopK, "lsh": LSH,
    "aft_full": AFT, "aft_simple": AFT, "aft_local": AFT, "aft_conv": AFT, "fnet": FNet,
}


class FF(nn.Module):
    def __init__(self, d, d_ff, chunks=1):
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)
        self.chunks = chunks

    def run(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))

    def forward(self, x):
        if self.chunks == 1:
            return self.run(x)
        shape = x.shape
        rows = x.reshape(-1, shape[-1])
        n = math.ceil(rows.shape[0] / self.chunks)
        grad = torch.is_grad_enabled()
        outs = [checkpoint(self.run, r, use_reentrant=False) if grad else self.run(r) for r in rows.split(n)]
        return torch.cat(outs).reshape(shape)


class Block(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        d = cfg["d_model"]
        m = dict(cfg["mixer"])
        kind = m.pop("kind")
        if kind not in MIXERS:
            raise ValueError(f"mixer.kind: unknown kind {kind!r} (known: {', '.join(sorted(MIXERS))})")
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.mixer = MIXERS[kind](MixerConfig(d, cfg["n_heads"], cfg["max_len"], cfg["causal"], i,
                                              cfg["n_layers"], kind, m))
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.ff = FF(d, cfg["d_ff"], cfg["ff_chunks"])
        self.p = cfg["dropout"]

    def mix(self, x, pad, seed):
        """The mixer branch: mixer(LN1(x)), dropped in training."""
        return self.drop(self.mixer(self.ln1(x), pad, seed), seed, 0)

    def feed(self, x, seed):
        """The feed-forward branch: FF(LN2(x)), dropped in training."""
        return self.drop(self.ff(self.ln2(x)), seed, 1)

    def drop(self, y, seed, branch):
        if not self.training or self.p == 0:
            return y
        keep = rng.dropout_keep(rng.dropout_key(seed, branch), y.numel(), self.p)
        factor = torch.from_numpy(keep).reshape(y.shape).to(y.device, y.dtype) * (1 / (1 - self.p))
        return y * factor  # as tokenmix: a dropped element times 0 (a non-finite one stays so)

    def forward(self, x, pad, seed):
        x = x + self.mix(x, pad, seed)
        return x + self.feed(x, seed)


class Model(nn.Module):
    """The model of config cfg (a dict, as in config.json), its parameters
    in dtype (default: torch's default dtype). With stage "pretrain" it is
    the model of cfg's pretraining stage (train.pretrain): the head is
    pretrain_head [vocab_size, d] and the logits are per token, as for an
    lm; self.config stays cfg (the run's config), self.cfg is the stage's
    (config.pretrain_stage)."""

    def __init__(self, cfg, dtype=None, stage="train"):
        super().__init__()
        self.config = copy.deepcopy(cfg)
        c = self.cfg = cfgmod.check(cfg)
        if stage == "pretrain":
            if "pretrain" not in cfgmod.train(c):
                raise ValueError("train.pretrain: the config has none, so no pretraining stage")
            c = self.cfg = cfgmod.pretrain_stage(c)
        elif stage != "train":
            raise ValueError(f'stage: want "train" or "pretrain", got {stage!r}')
        self.stage = stage
        self.head_name = cfgmod.PRETRAIN_HEAD if stage == "pretrain" else "head"
        d = c["d_model"]
        self.embed = nn.Embedding(c["vocab_size"], d)
        self.pos = nn.Embedding(c["max_len"], d)
        self.blocks = nn.ModuleList([Block(c, i) for i in range(c["n_layers"])])
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        width = {"classify": c.get("n_classes"), "tag": c.get("n_classes"), "embed": d}.get(c["task"], c["vocab_size"])
        setattr(self, self.head_name, nn.Linear(d, width))
        self.seed = cfgmod.train(c)["seed"]
        self.step = 0
        self.label_names = None
        if dtype is not None:
            self.to(dtype)

    def pass_seed(self, layer):
        return rng.pass_seed(self.seed, self.step, layer)

    def forward(self, tokens):
        """Logits of tokens [B, T] (int): [B, T, vocab_size] or [B, n_classes]."""
        c = self.cfg
        if tokens.dim() != 2:
            raise ValueError(f"tokens: want [B, T], got shape {list(tokens.shape)}")
        B, T = tokens.shape
        if T > c["max_len"] or T < 1:
            raise ValueError(f"tokens: length {T} not in [1, max_len={c['max_len']}]")
        tokens = tokens.long()
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= c["vocab_size"]):
            raise ValueError(f"tokens: ids must be in [0, vocab_size={c['vocab_size']})")
        pad_id = c.get("pad_id")
        pad = (tokens == pad_id) if pad_id is not None else None
        x = self.embed(tokens) + self.pos.weight[:T]
        seeds = [self.pass_seed(i) for i in range(len(self.blocks))]
        if c["reversible"]:
            if torch.is_grad_enabled():
                params = [p for p in self.blocks.parameters() if p.requires_grad]
                x1, x2 = Reversible.apply(x, self.blocks, pad, seeds, *params)
            else:
                x1 = x2 = x
                for blk, s in zip(self.blocks, seeds):
                    x1 = x1 + blk.mix(x2, pad, s)
                    x2 = x2 + blk.feed(x1, s)
            x = (x1 + x2) / 2
        else:
            for blk, s in zip(self.blocks, seeds):
                if c["checkpoint"] and torch.is_grad_enabled():
                    x = checkpoint(lambda x, blk=blk, s=s: blk(x, pad, s), x, use_reentrant=False)
                else:
                    x = blk(x, pad, s)
        h = self.ln_f(x)
        head = getattr(self, self.head_name)
        if c["task"] in ("lm", "tag"):  # a tagger: one tag per position
            return head(h)
        if c["pool"] == "first":
            return head(h[:, 0])
        keep = torch.ones(B, T, dtype=h.dtype, device=h.device) if pad is None else (~pad).to(h.dtype)
        n = keep.sum(1, keepdim=True)
        return head((h * keep[:, :, None]).sum(1) / n.clamp(min=1))

    def loss(self, logits, targets, label_smoothing=0.0):
        """Mean cross-entropy over the targets ≠ −1 (0 when there are none),
        against (1−ε)·onehot + ε/V with label_smoothing ε (train.label_smoothing,
        training only). An embedder's is InfoNCE (Go's internal/model/nce.go):
        the rows normalised, each anchor row i (target t_i, its positive's
        row) scores the other rows by e_i·e_j/temperature, and the loss is
        the mean cross-entropy of the positives, computed in float64."""
        if self.cfg["task"] == "embed":
            tgt = targets.reshape(-1).long().to(logits.device)
            e = F.normalize(logits.double(), dim=1, eps=1e-12)  # in float64, as Go computes it
            s = e @ e.T / self.cfg.get("temperature", 0.05)
            s = s.masked_fill(torch.eye(len(s), dtype=torch.bool, device=s.device), float("-inf"))
            if (tgt != -1).sum() == 0:
                return logits.sum() * 0
            return F.cross_entropy(s, tgt, ignore_index=-1).to(logits.dtype)
        flat, tgt = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long().to(logits.device)
        if (tgt != -1).sum() == 0:
            return flat.sum() * 0
        return F.cross_entropy(flat.float() if flat.dtype in (torch.float16, torch.bfloat16) else flat,
                               tgt, ignore_index=-1, label_smoothing=label_smoothing)

    def param_groups(self, weight_decay):
        """AdamW groups: no decay for biases, LayerNorms, pos.weight and each
        mixer's no_decay names. The parameters train.freeze names are in no
        group and stop requiring gradients (Go's Model.Frozen): training
        leaves them as they are, outside the gradient norm."""
        nd = set()
        for i, blk in enumerate(self.blocks):
            for n in getattr(blk.mixer, "no_decay", ()):
                nd.add(f"blocks.{i}.mixer.{n}")
        frozen = self.frozen()
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            if name in frozen:
                p.requires_grad_(False)
            elif (name.endswith(".bias") or re.fullmatch(r"blocks\.\d+\.ln[12]\.weight", name)
                    or name in ("ln_f.weight", "pos.weight") or name in nd):
                no_decay.append(p)
            else:
                decay.append(p)
        return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]

    def frozen(self):
        """The names of the parameters train.freeze names; a prefix that
        matches none is an error."""
        t = self.cfg.get("train") or {}
        names = [n for n, _ in self.named_parameters()]
        out = set()
        for pre in t.get("freeze") or ():
            hit = [n for n in names if n.startswith(pre)]
            if not hit:
                tops = sorted({n.split(".")[0] + "." for n in names})
                raise ValueError(f"train.freeze: {pre!r} matches no parameter name (they start with {', '.join(tops)})")
            out.update(hit)
        return out

    def load_weights(self, src, path="weights"):
        """Loads tokenmix weights: a safetensors path, or {name: tensor}.
        Every name and shape must match; F32, F64, F16 and BF16 are read."""
        if not isinstance(src, dict):
            path = str(src)
            src, _ = st.load(path)
        own = self.state_dict()
        missing = sorted(set(own) - set(src))
        extra = sorted(set(src) - set(own))
        if missing:
            raise ValueError(f"{path}: missing tensor {missing[0]}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        if extra:
            raise ValueError(f"{path}: unexpected tensor {extra[0]}" + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""))
        with torch.no_grad():
            for name, p in own.items():
                t = src[name]
                if list(t.shape) != list(p.shape):
                    raise ValueError(f"{path}: tensor {name}: shape {list(t.shape)}, want {list(p.shape)}")
                if not t.is_floating_point():
                    raise ValueError(f"{path}: tensor {name}: dtype {t.dtype} is not a float type")
                p.copy_(t.to(p.dtype))

    def weights(self, dtype=torch.float32):
        """{name: tensor} in dtype: a tokenmix weights file's contents."""
        return {k: v.detach().to("cpu", dtype) for k, v in self.state_dict().items()}


class Reversible(torch.autograd.Function):
    """The reversible blocks; forward keeps only the last two streams and
    backward reconstructs each block's inputs from its outputs:
    x2 = y2 − FF(LN2(y1)), x1 = y1 − mixer(LN1(x2)) (each branch with its
    dropout mask, which depends only on the seeds). Parameter gradients are
    accumulated into .grad as backward recomputes each block."""

    @staticmethod
    def forward(ctx, x, blocks, pad, seeds, *params):
        with torch.no_grad():
            x1 = x2 = x
            for blk, s in zip(blocks, seeds):
                x1 = x1 + blk.mix(x2, pad, s)
                x2 = x2 + blk.feed(x1, s)
        ctx.blocks, ctx.pad, ctx.seeds = blocks, pad, seeds
        ctx.save_for_backward(x1, x2)
        return x1, x2

    @staticmethod
    def backward(ctx, g1, g2):
        y1, y2 = ctx.saved_tensors
        for blk, s in reversed(list(zip(ctx.blocks, ctx.seeds))):
            with torch.enable_grad():
                y1r = y1.detach().requires_grad_(True)
                f = blk.feed(y1r, s)
                f.backward(g2)
            with torch.no_grad():
                x2 = y2 - f
                g1 = g1 + y1r.grad
            with torch.enable_grad():
                x2r = x2.detach().requires_grad_(True)
                m = blk.mix(x2r, ctx.pad, s)
                m.backward(g1)
            with torch.no_grad():
                x1 = y1 - m
                g2 = g2 + x2r.grad
            y1, y2 = x1, x2
        return (g1 + g2, None, None, None) + (None,) * (len(ctx.needs_input_grad) - 4)
