"""Parity helpers: random weights and batches, one forward and backward
(logits, loss, every grad.<name>, as `tokenmix grad` writes them), and the
per-tensor error measure of docs/model.md ("Parity with PyTorch")."""
import numpy as np
import torch

from . import config as cfgmod
from . import st
from .model import Model
from .train import train_steps


def make_weights(cfg, seed):
    """Random weights (not an init scheme): every tensor N(0, 0.2²), LayerNorm
    gains 1 + N(0, 0.1²), so biases and gains matter in the gradients."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, p in Model(cfg).state_dict().items():
        if name.endswith(".weight") and "ln" in name.split(".")[-2]:
            v = 1 + 0.1 * rng.standard_normal(tuple(p.shape))
        else:
            v = 0.2 * rng.standard_normal(tuple(p.shape))
        out[name] = torch.from_numpy(v.astype(np.float32))
    return out


def make_batch(cfg, seed, B, T):
    """Random tokens (avoiding pad_id), with padding when pad_id is set: the
    tail of the last sequence, its position 0 and one inner position of
    sequence 0. lm targets are random with some −1."""
    rng = np.random.default_rng(seed + 1)
    V, pad = cfg["vocab_size"], cfg.get("pad_id")
    tokens = rng.integers(0, V, size=(B, T))
    if pad is not None:
        tokens[tokens == pad] = (pad + 1) % V
        tokens[B - 1, T - 3:] = pad
        tokens[B - 1, 0] = pad
        tokens[0, T // 2] = pad
    if cfg["task"] == "embed":  # the first half of the rows are anchors, their positives the second half
        targets = np.full((B,), -1)
        targets[: B // 2] = np.arange(B // 2) + B // 2
    elif cfg["task"] == "classify":
        targets = rng.integers(0, cfg["n_classes"], size=(B,))
    else:
        targets = rng.integers(0, cfg["n_classes"] if cfg["task"] == "tag" else V, size=(B, T))
        targets[0, 1] = -1
        targets[B - 1, T - 1] = -1
    return {"tokens": torch.from_numpy(tokens.astype(np.int32)), "targets": torch.from_numpy(targets.astype(np.int32))}


def grad(cfg, weights, batch, dtype=torch.float64, device="cpu"):
    """Logits, loss and every parameter gradient, in dtype, computed on
    device and returned on the CPU: what `tokenmix grad` computes
    (train.seed is the pass seed's run seed, step 0)."""
    model = Model(cfg, dtype=dtype)
    model.load_weights(weights if isinstance(weights, dict) else st.load(weights)[0])
    model.to(device)
    if not isinstance(batch, dict):
        batch = st.load(batch)[0]
    logits = model(batch["tokens"].long().to(device))
    loss = model.loss(logits, batch["targets"].to(device), cfgmod.train(cfg)["label_smoothing"])  # training mode
    loss.backward()
    out = {"logits": logits.detach().cpu(), "loss": loss.detach().reshape(()).cpu()}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.detach().cpu()
    return out


def train_losses(cfg, weights, batch, n, dtype=torch.float64):
    """The losses before each of n AdamW updates on batch."""
    model = Model(cfg, dtype=dtype)
    model.load_weights(weights if isinstance(weights, dict) else st.load(weights)[0])
    if not isinstance(batch, dict):
        batch = st.load(batch)[0]
    return train_steps(model, batch["tokens"].long(), batch["targets"].long(), n)


def zero_grad(name, rope=False):
    """Whether gradient name is zero in exact arithmetic (every key bias:
    softmax, α-entmax, top-k and AFT are invariant to its shift; not with
    RoPE, which rotates the bias by each key's position), as Go's zeroGrad."""
    return not rope and name.endswith(".mixer.k.bias")


def compare(got, want, rope=False):
    """The per-tensor errors of docs/model.md: {name: max|a−b| / max(max|b|,
    floor)}, floor 1e-6·gmax (1e-3·gmax for zero-exact gradients, see
    zero_grad; rope: the mixer rotates by RoPE), gmax the largest |want|
    gradient. Raises ValueError when the names or shapes differ."""
    if set(got) != set(want):
        raise ValueError(f"tensor names differ: {sorted(set(got) ^ set(want))}")
    gmax = max((want[k].double().abs().max().item() for k in want if k.startswith("grad.")), default=0.0)
    errs = {}
    for k in sorted(want):
        a, b = got[k].double(), want[k].double()
        if list(a.shape) != list(b.shape):
            raise ValueError(f"{k}: shape {list(a.shape)}, want {list(b.shape)}")
        floor = 0.0
        if k.startswith("grad."):
            floor = (1e-3 if zero_grad(k, rope) else 1e-6) * gmax
        num = (a - b).abs().max().item() if a.numel() else 0.0
        den = max(b.abs().max().item() if b.numel() else 0.0, floor)
        errs[k] = num / den if den else num
    return errs
