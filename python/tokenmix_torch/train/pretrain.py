"""Self-pretraining batches (train.pretrain; docs/model.md,
"Self-pretraining"): Go's internal/train pretrainBatch. A classify batch's
tokens [B, T] become the pretraining stage's tokens and targets [B, T]:

    lm:  targets[b, t] = tokens[b, t+1]; −1 at t = T−1 and where tokens[b, t]
         or tokens[b, t+1] is pad_id
    mlm: the positions rng.mask_positions picks for update step become
         mask_id and are the only targets (−1 elsewhere)

The masks are drawn over the global batch, so every rank of a run makes
the same batch and reads its rows.
"""
import numpy as np
import torch

from .. import rng


def next_token_targets(tokens, pad):
    """The lm targets of tokens [B, T] (pad None: no padding)."""
    tgt = torch.full_like(tokens, -1)
    tgt[:, :-1] = tokens[:, 1:]
    if pad is not None:
        bad = (tokens[:, :-1] == pad) | (tokens[:, 1:] == pad)
        tgt[:, :-1][bad] = -1
    return tgt


def mask_tokens(tokens, pc, pad, seed, step):
    """The mlm tokens and targets of tokens [B, T] at update step."""
    flat = tokens.reshape(-1).numpy()
    eligible = np.ones(len(flat), bool) if pad is None else flat != pad
    m = torch.from_numpy(rng.mask_positions(rng.mask_key(seed, step), eligible, pc["mask_rate"])).reshape(tokens.shape)
    tgt = torch.where(m, tokens, torch.full_like(tokens, -1))
    return torch.where(m, torch.full_like(tokens, pc["mask_id"]), tokens), tgt


def batch(tokens, cfg, pc, seed, step):
    """The pretraining tokens and targets of the global batch tokens [B, T]
    (cpu, long) for update step of a run with config cfg and train seed."""
    pad = cfg.get("pad_id")
    if pc["objective"] == "lm":
        return tokens, next_token_targets(tokens, pad)
    return mask_tokens(tokens, pc, pad, seed, step)
