#!/usr/bin/python3
"""PyTorch reference for tokenmix's model contract (float64).

Parity case (what the Go tests read):

    /usr/bin/python3 scripts/torch_reference.py --case internal/model/testdata/parity/<case>

reads <case>/config.json, creates <case>/weights.safetensors and
<case>/batch.safetensors when missing (or with --fresh), and writes
<case>/ref.safetensors: logits, loss, grad.<name> for every parameter, and
train_losses, the losses of the first 5 AdamW steps on the batch (schedule
and clipping from the config's "train" object). The metadata records the
SHA-256 of the three input files so Go can tell when the reference is stale.
To add a case for a new mixer: make a directory with a config.json and run
the command above.

Like `tokenmix grad` (any weights and batch):

    /usr/bin/python3 scripts/torch_reference.py --config C --weights W --batch B --out O
"""
import argparse
import hashlib
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenmix_st  # noqa: E402
import torchref  # noqa: E402

CONTRACT = "1"  # bump when the model contract changes; Go checks it
TRAIN_STEPS = 5


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def make_weights(cfg, seed):
    """Random weights (not an init scheme): every tensor N(0, 0.2^2), LayerNorm
    gains 1 + N(0, 0.1^2), so biases and gains matter in the gradients."""
    model = torchref.Model(cfg)
    rng = np.random.default_rng(seed)
    out = {}
    for name, p in model.state_dict().items():
        if name.endswith(".weight") and ("ln" in name.split(".")[-2]):
            v = 1 + 0.1 * rng.standard_normal(p.shape)
        else:
            v = 0.2 * rng.standard_normal(p.shape)
        out[name] = v.astype(np.float32)
    return out


def make_batch(cfg, seed, B, T):
    """Random tokens (avoiding pad_id), with padding when pad_id is set: the
    tail of sequence 1, position 0 of sequence 1 and one inner position of
    sequence 0. lm targets are random with some -1."""
    rng = np.random.default_rng(seed + 1)
    V = cfg["vocab_size"]
    pad = cfg.get("pad_id")
    tokens = rng.integers(0, V, size=(B, T))
    if pad is not None:
        tokens[tokens == pad] = (pad + 1) % V
        tokens[B - 1, T - 3:] = pad
        tokens[B - 1, 0] = pad
        tokens[0, T // 2] = pad
    if cfg["task"] == "classify":
        targets = rng.integers(0, cfg["n_classes"], size=(B,))
    else:
        targets = rng.integers(0, V, size=(B, T))
        targets[0, 1] = -1
        targets[B - 1, T - 1] = -1
    return {"tokens": tokens.astype(np.int32), "targets": targets.astype(np.int32)}


def grad_outputs(cfg, weights_path, batch_path):
    """Logits, loss and every parameter gradient in float64."""
    torch.set_default_dtype(torch.float64)
    model = torchref.Model(cfg)
    torchref.load_weights(model, weights_path)
    batch, _ = tokenmix_st.load(batch_path)
    tokens = torch.from_numpy(batch["tokens"].astype(np.int64))
    targets = torch.from_numpy(batch["targets"].astype(np.int64))
    model.seed = int(cfg.get("train", {}).get("seed", 0))
    logits, loss = model(tokens, targets)
    loss.backward()
    out = {"logits": logits.detach().numpy(), "loss": np.array(loss.item())}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.numpy()
    return model, tokens, targets, out


def run_case(d, fresh, seed, B, T):
    cfg_path = os.path.join(d, "config.json")
    cfg = torchref.load_config(cfg_path)
    wp, bp = os.path.join(d, "weights.safetensors"), os.path.join(d, "batch.safetensors")
    if fresh or not os.path.exists(wp):
        tokenmix_st.save(wp, make_weights(cfg, seed))
    if fresh or not os.path.exists(bp):
        tokenmix_st.save(bp, make_batch(cfg, seed, B, T))
    _, tokens, targets, out = grad_outputs(cfg, wp, bp)
    # Fresh model for the training steps (the gradient pass above is separate).
    model = torchref.Model(cfg)
    torchref.load_weights(model, wp)
    out["train_losses"] = np.array(torchref.train_steps(model, tokens, targets, TRAIN_STEPS))
    for k in list(out):
        if k.startswith("grad."):
            out[k] = out[k].astype(np.float32)  # keeps the files small; 1e-3 parity needs no more
    meta = {"contract": CONTRACT, "torch": torch.__version__, "config_sha256": sha256(cfg_path),
            "weights_sha256": sha256(wp), "batch_sha256": sha256(bp)}
    tokenmix_st.save(os.path.join(d, "ref.safetensors"), out, meta)
    print(f"{d}: loss {out['loss']:.6f}, train losses {np.round(out['train_losses'], 6).tolist()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], help="parity case directory (repeatable)")
    ap.add_argument("--fresh", action="store_true", help="regenerate weights and batch too")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--B", type=int, default=2)
    ap.add_argument("--T", type=int, default=16)
    ap.add_argument("--config")
    ap.add_argument("--weights")
    ap.add_argument("--batch")
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(a.seed)
    if a.case:
        for d in a.case:
            run_case(d, a.fresh, a.seed, a.B, a.T)
        return
    if not (a.config and a.weights and a.batch and a.out):
        ap.error("want --case DIR, or all of --config, --weights, --batch and --out")
    cfg = torchref.load_config(a.config)
    _, _, _, out = grad_outputs(cfg, a.weights, a.batch)
    tokenmix_st.save(a.out, out)


if __name__ == "__main__":
    main()
