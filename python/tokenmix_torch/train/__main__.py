"""python -m tokenmix_torch.train: `tokenmix train` in PyTorch, on one
process, on N processes of this host (--nproc N), or on every process
torchrun starts (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set).

    python -m tokenmix_torch.train --config C --data D --out DIR [--nproc N]
    torchrun --nproc_per_node N -m tokenmix_torch.train --config C --data D --out DIR
"""
import argparse
import sys

import torch

from . import dist, loop


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m tokenmix_torch.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", help='model config JSON; its "train" object sets the run (defaults otherwise)')
    ap.add_argument("--data", help='lm: a text file or directory (bytes; vocab_size ≥ 256); classify: JSONL lines '
                                   '{"text"|"tokens": …, "label": …}')
    ap.add_argument("--val", help="classify: JSONL validation lines (default: hold out --val-frac of --data)")
    ap.add_argument("--out", help="run directory")
    ap.add_argument("--resume", action="store_true", help="continue the run in --out from its newest checkpoint")
    ap.add_argument("--val-frac", type=float, default=0.05, help="fraction of the data kept for validation")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    ap.add_argument("--skip-nonfinite", type=int, default=0, metavar="N",
                    help="pass over up to N steps whose loss or gradient is NaN or infinite before stopping on one")
    ap.add_argument("--nproc", type=int, metavar="N", help="train on N processes of this host (not under torchrun)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cpu (Gloo between processes) or cuda (one GPU per process, NCCL)")
    ap.add_argument("--bf16", action="store_true", help="forward under bfloat16 autocast (weights stay float32)")
    ap.add_argument("--threads", type=int, default=0, metavar="N",
                    help="torch threads per process (default: the CPUs divided by the processes on this host)")
    ap.add_argument("--stop-at", type=int, metavar="STEP",
                    help="stop after update STEP with a checkpoint, as an interruption does (continue with --resume)")
    o = ap.parse_args(argv)
    if not o.data or not o.out or not (o.config or o.resume):
        ap.error("want --config C (or --resume), --data D and --out DIR")
    if o.skip_nonfinite < 0:
        ap.error("--skip-nonfinite must be ≥ 0")
    if o.nproc is not None and o.nproc < 1:
        ap.error(f"--nproc: want N ≥ 1, got {o.nproc}")
    if o.threads < 0:
        ap.error(f"--threads: want N ≥ 0, got {o.threads}")
    return o


def main(argv=None):
    o = parse(argv)
    try:
        topo = dist.from_env()
        if topo is not None and o.nproc:
            raise ValueError("--nproc: not under torchrun, which starts the processes itself")
        if o.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda: PyTorch sees no GPU here")
        if topo is None:
            n = o.nproc or 1
            if o.device == "cuda" and n > torch.cuda.device_count():
                raise ValueError(f"--nproc {n}: this host has {torch.cuda.device_count()} GPUs")
            loop.prepare(o, n)  # every user error before any process starts
    except ValueError as e:
        print(f"tokenmix_torch.train: {e}", file=sys.stderr)
        return 1
    if topo is not None:
        return loop.run_rank(o, topo)
    if n == 1:
        return loop.run_rank(o, dist.Topology())
    return dist.spawn(loop.worker, n, (o, n))


if __name__ == "__main__":
    sys.exit(main())
