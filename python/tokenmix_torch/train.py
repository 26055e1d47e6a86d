"""tokenmix's training step in PyTorch: AdamW (torch.optim.AdamW) with
tokenmix's weight-decay groups, warmup + cosine schedule and global-norm
clipping, as docs/model.md ("Training") specifies."""
import math

import torch

from . import config as cfgmod


def schedule(step, lr, min_lr, warmup, steps):
    """The learning rate of update step (0-based): linear warmup, then
    cosine to min_lr (Go's optim.Schedule.At)."""
    if step < warmup:
        return lr * (step + 1) / warmup
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
    loss = model.loss(model(tokens), targets)
    loss.backward()
    if tc["grad_clip"] > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
    for g in opt.param_groups:
        g["lr"] = schedule(model.step, tc["lr"], tc["min_lr"], tc["warmup"], tc["steps"])
    opt.step()
    model.step += 1
    return loss.item()


def train_steps(model, tokens, targets, n):
    """n updates from step 0 on one batch; the loss before each."""
    model.seed, model.step = cfgmod.train(model.cfg)["seed"], 0
    opt = optimizer(model)
    return [step(model, opt, tokens, targets) for _ in range(n)]
