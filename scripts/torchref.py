"""The tokenmix model contract in PyTorch (see docs/model.md).

This module is the independent reference the Go tests compare against, and
the bridge to PyTorch: parameter names equal tokenmix's weight names, so a
tokenmix weights file loads with model.load_state_dict and back.

    cfg = json.load(open("config.json"))
    model = Model(cfg)
    load_weights(model, "weights.safetensors")   # tokenmix -> PyTorch
    ...train on GPUs...
    save_weights(model, "weights.safetensors")   # PyTorch -> tokenmix

Forward (pre-LN; B batch, T time, d = d_model):

    x = embed[tokens] + pos[0:T]
    for each block i:  x = x + mixer_i(LN1_i(x));  x = x + FF_i(LN2_i(x))
    h = LN_f(x)
    lm:       logits = head(h)                      loss = mean CE over targets != -1
    classify: logits = head(mean_t of h, non-pad)   loss = mean CE over targets != -1
              (pool "first": logits = head(h[:, 0]))

LayerNorm eps 1e-5; FF(x) = fc2(GELU_tanh(fc1(x))); linears y = x W^T + b.

Mixers live in modules torchref_<kind>.py; MIXERS maps a kind to a
constructor taking a MixerConfig. A mixer module's forward is
forward(x, pad, seed): x [B,T,D] (LN1 output), pad a bool [B,T] tensor
(True = padding key) or None, seed the pass seed (see pass_seed). A mixer
lists relative names of parameters excluded from weight decay besides
biases in an attribute `no_decay` (optional).
"""
import importlib
import json
import math
import re
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import tokenmix_st

# One line per mixer kind: kind -> constructor(MixerConfig) -> nn.Module.
MIXERS = {
    "full": lambda mc: importlib.import_module("torchref_full").Full(mc),
    "aft_full": lambda mc: importlib.import_module("torchref_aft").AFT("aft_full", mc),
    "aft_simple": lambda mc: importlib.import_module("torchref_aft").AFT("aft_simple", mc),
    "aft_local": lambda mc: importlib.import_module("torchref_aft").AFT("aft_local", mc),
    "aft_conv": lambda mc: importlib.import_module("torchref_aft").AFT("aft_conv", mc),
    "fnet": lambda mc: importlib.import_module("torchref_fnet").FNet(mc),
    "entmax": lambda mc: importlib.import_module("torchref_entmax").Entmax(mc),
    "topk": lambda mc: importlib.import_module("torchref_topk").TopK(mc),
}

CONFIG_KEYS = {"vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len", "causal", "task",
               "n_classes", "pad_id", "pool", "reversible", "checkpoint", "ff_chunks", "mixer", "train"}


@dataclass
class MixerConfig:
    """What a mixer constructor gets (mirrors Go's mixer.Config)."""
    d: int
    heads: int
    max_len: int
    causal: bool
    layer: int
    n_layers: int
    opts: dict = field(default_factory=dict)  # the mixer object minus "kind"


def check_config(cfg):
    unknown = set(cfg) - CONFIG_KEYS
    if unknown:
        raise ValueError(f"config: unknown keys {sorted(unknown)}")
    if cfg["d_model"] % cfg["n_heads"]:
        raise ValueError("n_heads: must divide d_model")
    if cfg["task"] not in ("lm", "classify"):
        raise ValueError("task: must be lm or classify")
    if cfg.get("reversible") and cfg.get("checkpoint"):
        raise ValueError("checkpoint: not with reversible")


class FF(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        d = cfg["d_model"]
        m = dict(cfg["mixer"])
        kind = m.pop("kind")
        if kind not in MIXERS:
            raise ValueError(f"mixer.kind: no PyTorch reference for {kind!r} (known: {sorted(MIXERS)})")
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.mixer = MIXERS[kind](MixerConfig(d, cfg["n_heads"], cfg["max_len"], bool(cfg.get("causal", False)),
                                              i, cfg["n_layers"], m))
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.ff = FF(d, cfg["d_ff"])

    def forward(self, x, pad, seed):
        x = x + self.mixer(self.ln1(x), pad, seed)
        return x + self.ff(self.ln2(x))


def splitmix(x):
    M = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def pass_seed(seed, step, layer):
    """Go's model.PassSeed: the seed of a block's mixer at a training step."""
    M = (1 << 64) - 1
    return splitmix((splitmix((splitmix(seed) + step) & M) + layer) & M)


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        check_config(cfg)
        self.cfg = cfg
        d = cfg["d_model"]
        self.embed = nn.Embedding(cfg["vocab_size"], d)
        self.pos = nn.Embedding(cfg["max_len"], d)
        self.blocks = nn.ModuleList([Block(cfg, i) for i in range(cfg["n_layers"])])
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        out = cfg["n_classes"] if cfg["task"] == "classify" else cfg["vocab_size"]
        self.head = nn.Linear(d, out)
        self.seed, self.step = 0, 0

    def forward(self, tokens, targets=None):
        """tokens [B,T] int64; targets [B,T] (lm) or [B] (classify), -1 = ignore.
        Returns (logits, loss or None)."""
        B, T = tokens.shape
        pad_id = self.cfg.get("pad_id")
        pad = (tokens == pad_id) if pad_id is not None else None
        x = self.embed(tokens) + self.pos.weight[:T]
        if self.cfg.get("reversible"):
            # RevNet couplings; autograd keeps every activation (no reconstruction).
            x1 = x2 = x
            for i, blk in enumerate(self.blocks):
                x1 = x1 + blk.mixer(blk.ln1(x2), pad, pass_seed(self.seed, self.step, i))
                x2 = x2 + blk.ff(blk.ln2(x1))
            x = (x1 + x2) / 2
        else:
            for i, blk in enumerate(self.blocks):
                x = blk(x, pad, pass_seed(self.seed, self.step, i))
        h = self.ln_f(x)
        if self.cfg["task"] == "classify" and self.cfg.get("pool", "mean") == "first":
            logits = self.head(h[:, 0])
        elif self.cfg["task"] == "classify":
            keep = torch.ones(B, T, dtype=h.dtype) if pad is None else (~pad).to(h.dtype)
            n = keep.sum(1, keepdim=True)
            pooled = (h * keep[:, :, None]).sum(1) / n.clamp(min=1)
            logits = self.head(pooled)
        else:
            logits = self.head(h)
        if targets is None:
            return logits, None
        flat, tgt = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
        if (tgt != -1).sum() == 0:
            return logits, flat.sum() * 0
        return logits, F.cross_entropy(flat, tgt, ignore_index=-1)

    def param_groups(self, weight_decay):
        """AdamW groups: no decay for biases, LayerNorms, pos.weight and each
        mixer's no_decay names."""
        nd = set()
        for i, blk in enumerate(self.blocks):
            for n in getattr(blk.mixer, "no_decay", ()):
                nd.add(f"blocks.{i}.mixer.{n}")
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            if (name.endswith(".bias") or re.fullmatch(r"blocks\.\d+\.ln[12]\.weight", name)
                    or name == "ln_f.weight" or name == "pos.weight" or name in nd):
                no_decay.append(p)
            else:
                decay.append(p)
        return [{"params": decay, "weight_decay": weight_decay},
                {"params": no_decay, "weight_decay": 0.0}]


def schedule(step, lr, min_lr, warmup, steps):
    """Go's optim.Schedule.At: linear warmup, then cosine to min_lr."""
    if step < warmup:
        return lr * (step + 1) / warmup
    if step >= steps or steps <= warmup:
        return min_lr
    p = (step - warmup) / (steps - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * p))


TRAIN_DEFAULTS = dict(lr=3e-4, min_lr=0.0, warmup=0, steps=1000, weight_decay=0.0, grad_clip=1.0,
                      beta1=0.9, beta2=0.999, eps=1e-8, seed=0)


def train_steps(model, tokens, targets, n):
    """Runs n AdamW steps on one batch with the config's train settings and
    returns the loss before each update."""
    tc = dict(TRAIN_DEFAULTS)
    tc.update({k: v for k, v in model.cfg.get("train", {}).items() if k in tc})
    model.seed = int(tc["seed"])
    opt = torch.optim.AdamW(model.param_groups(tc["weight_decay"]), lr=tc["lr"],
                            betas=(tc["beta1"], tc["beta2"]), eps=tc["eps"])
    losses = []
    for s in range(n):
        model.step = s
        opt.zero_grad()
        _, loss = model(tokens, targets)
        loss.backward()
        if tc["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
        for g in opt.param_groups:
            g["lr"] = schedule(s, tc["lr"], tc["min_lr"], tc["warmup"], tc["steps"])
        opt.step()
        losses.append(loss.item())
    return losses


def load_weights(model, path):
    """Loads a tokenmix weights file (exact names, any float dtype)."""
    tensors, _ = tokenmix_st.load(path)
    sd = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in tensors.items()}
    model.load_state_dict(sd, strict=True)


def save_weights(model, path):
    """Writes the parameters as a tokenmix weights file (F32)."""
    tensors = {k: v.detach().cpu().to(torch.float32).numpy() for k, v in model.state_dict().items()}
    tokenmix_st.save(path, tensors)


def load_config(path):
    with open(path) as f:
        return json.load(f)
