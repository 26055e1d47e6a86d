"""tokenmix's training step in PyTorch: AdamW (torch.optim.AdamW) with
tokenmix's weight-decay groups, warmup + cosine schedule and global-norm
clipping, as docs/model.md ("Training") specifies, and tokenmix's
initialisation. `python -m tokenmix_torch.train` is `tokenmix train` on
one or many processes (loop.py, dist.py)."""
import hashlib
import math
import re

import torch

from .. import config as cfgmod
from ..rng import splitmix


def schedule(step, lr, min_lr, warmup, steps, constant=False):
    """The learning rate of update step (0-based): linear warmup, then
    cosine to min_lr, or lr when constant (Go's optim.Schedule.At)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    if constant:
        return lr
    if step >= steps or steps <= warmup:
        return min_lr
    p = (step - warmup) / (steps - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * p))


def optimizer(model):
    """AdamW over model's parameter groups with the config's train settings."""
    tc = cfgmod.train(model.cfg)
    return torch.optim.AdamW(model.param_groups(tc["weight_decay"]), lr=tc["lr"],
                             betas=(tc["beta1"], tc["beta2"]), eps=tc["eps"])


def step(model, opt, tokens, targets):
    """One update with index model.step (then model.step += 1); returns the
    loss before it."""
    tc = cfgmod.train(model.cfg)
    opt.zero_grad()
    loss = model.loss(model(tokens), targets, tc["label_smoothing"])
    loss.backward()
    if tc["grad_clip"] > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
    for g in opt.param_groups:
        g["lr"] = schedule(model.step, tc["lr"], tc["min_lr"], tc["warmup"], tc["steps"], tc["schedule"] == "constant")
    opt.step()
    model.step += 1
    return loss.item()


def train_steps(model, tokens, targets, n):
    """n updates from step 0 on one batch; the loss before each."""
    model.seed, model.step = cfgmod.train(model.cfg)["seed"], 0
    opt = optimizer(model)
    return [step(model, opt, tokens, targets) for _ in range(n)]


def init(model, seed):
    """Fills model's parameters as tokenmix's Model.Init does, GPT-2 style:
    biases 0, LayerNorm gains 1, mixer parameters their kind's constant (as
    built), fc2 and the mixers' output projections N(0, (0.02/√(2·n_layers))²),
    every other weight N(0, 0.02²). Each tensor draws from its own torch
    generator keyed by (seed, name); the values are not Go's draws."""
    L = model.cfg["n_layers"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.zero_()
            elif re.fullmatch(r"(blocks\.\d+\.ln[12]|ln_f)\.weight", name):
                p.fill_(1)
            elif name.endswith(".weight") and (name in ("embed.weight", "pos.weight", "head.weight",
                                                        "pretrain_head.weight")
                                               or re.fullmatch(r"blocks\.\d+\.(ff\.fc[12]|mixer\.\w+)\.weight", name)):
                residual = re.fullmatch(r"blocks\.\d+\.(ff\.fc2|mixer\.o)\.weight", name)
                key = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
                g = torch.Generator().manual_seed(splitmix(seed ^ key) >> 1)
                std = 0.02 / math.sqrt(2 * L) if residual else 0.02
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)
