#!/usr/bin/python3
"""The float64 PyTorch reference of tokenmix's model contract: the
tokenmix_torch package (python/) run in float64.

Parity case (what `go test ./internal/model -run TorchParity` reads):

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

The committed LSH rotation draws (internal/mixer/lsh/testdata/rotations.json):

    /usr/bin/python3 scripts/torch_reference.py --rotations internal/mixer/lsh/testdata/rotations.json
"""
import argparse
import hashlib
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from tokenmix_torch import config, parity, rng, st  # noqa: E402

CONTRACT = "1"  # bump when the model contract changes; Go checks it
TRAIN_STEPS = 5


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_case(d, fresh, seed, B, T):
    cfg_path = os.path.join(d, "config.json")
    cfg = config.load(cfg_path)
    wp, bp = os.path.join(d, "weights.safetensors"), os.path.join(d, "batch.safetensors")
    if fresh or not os.path.exists(wp):
        st.save(wp, parity.make_weights(cfg, seed))
    if fresh or not os.path.exists(bp):
        st.save(bp, parity.make_batch(cfg, seed, B, T))
    out = parity.grad(cfg, wp, bp, torch.float64)
    out["train_losses"] = torch.tensor(parity.train_losses(cfg, wp, bp, TRAIN_STEPS, torch.float64))
    for k in list(out):
        if k.startswith("grad."):
            out[k] = out[k].float()  # keeps the files small; 1e-3 parity needs no more
    meta = {"contract": CONTRACT, "torch": torch.__version__, "config_sha256": sha256(cfg_path),
            "weights_sha256": sha256(wp), "batch_sha256": sha256(bp)}
    st.save(os.path.join(d, "ref.safetensors"), out, meta)
    losses = [round(x, 6) for x in out["train_losses"].tolist()]
    print(f"{d}: loss {out['loss'].item():.6f}, train losses {losses}")


# (seed, layer, round, head, count): the streams whose first draws are committed.
ROTATION_STREAMS = [(0, 0, 0, 0, 16), (1, 0, 0, 0, 8), (1, 1, 2, 3, 8), (0xFFFFFFFFFFFFFFFF, 16383, 63, 65535, 8),
                    (rng.pass_seed(7, 100, 2), 2, 1, 0, 8)]


def write_rotations(path):
    """Writes the first draws of a few LSH rotation streams, as float64 bit
    patterns (hex) and values, for the Go and Python tests."""
    cases = []
    for seed, layer, r, h, n in ROTATION_STREAMS:
        z = rng.lsh_normals(seed, rng.lsh_stream(layer, r, h), n)
        cases.append({"seed": seed, "layer": layer, "round": r, "head": h,
                      "bits": ["%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0] for x in z],
                      "values": [float(x) for x in z]})
    doc = {"generator": "docs/model.md, LSH rotations: entry i of stream (seed, layer<<40 | round<<24 | head)",
           "draws": cases}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} streams to {path}")


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
    ap.add_argument("--rotations", help="write the committed LSH rotation draws to this file")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    if a.rotations:
        write_rotations(a.rotations)
        return
    if a.case:
        for d in a.case:
            run_case(d, a.fresh, a.seed, a.B, a.T)
        return
    if not (a.config and a.weights and a.batch and a.out):
        ap.error("want --case DIR, --rotations FILE, or all of --config, --weights, --batch and --out")
    out = parity.grad(config.load(a.config), a.weights, a.batch, torch.float64)
    st.save(a.out, out)


if __name__ == "__main__":
    main()
