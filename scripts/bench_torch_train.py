#!/usr/bin/python3
"""Times one training step (forward, backward, grad clipping, AdamW) of the
tokenmix model in PyTorch eager, float32, for side-by-side comparison with
`tokenmix bench train`. The model is the tokenmix_torch package's (python/;
the same contract, full attention in row blocks of 256 queries). Debian's
PyTorch calls the system BLAS: install libopenblas0-pthread, or its matrix
products run on the reference BLAS (24 s a step here instead of 3).

    /usr/bin/python3 scripts/bench_torch_train.py --threads 2
    tokenmix --threads 2 bench train --config C --len 1024 --batch 4

Defaults: d=256, 4 heads, 4 layers, d_ff=1024, T=1024, B=4, causal lm,
vocab 256. Prints one JSON object: {"threads", "len", "batch", "step_ms",
"tokens_per_s"} (median over --reps steps after one warm-up step).
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import tokenmix_torch  # noqa: E402
from tokenmix_torch import attention, config  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--len", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--config", help="model config JSON (default: the d=256 speed config)")
    ap.add_argument("--row-block", type=int, default=attention.ROW_BLOCK,
                    help="attention's query rows per block (the package's default is the fastest of "
                         "128, 256, 512 and the whole sequence at T=1024 with OpenBLAS)")
    a = ap.parse_args()
    attention.ROW_BLOCK = a.row_block
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.config:
        cfg = config.load(a.config)
    else:
        cfg = {"vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 4, "d_ff": 1024,
               "max_len": a.len, "causal": True, "task": "lm", "mixer": {"kind": "full"}}
    cfg["max_len"] = max(cfg["max_len"], a.len)
    tc = config.train(cfg)
    model = tokenmix_torch.Model(cfg)  # float32 (the default dtype)
    opt = tokenmix_torch.optimizer(model)
    B, T, V = a.batch, a.len, cfg["vocab_size"]
    tokens = torch.randint(0, V, (B, T))
    if cfg["task"] == "classify":
        targets = torch.randint(0, cfg["n_classes"], (B,))
    else:
        targets = torch.randint(0, V, (B, T))

    def step():
        opt.zero_grad(set_to_none=False)
        loss = model.loss(model(tokens), targets)
        loss.backward()
        if tc["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
        opt.step()

    step()
    ts = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    sec = ts[len(ts) // 2]
    print(json.dumps({"threads": a.threads, "len": T, "batch": B, "step_ms": sec * 1e3,
                      "tokens_per_s": B * T / sec, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
