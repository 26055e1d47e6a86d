"""The processes of a training run: torchrun's environment, or our own
launcher (torch.multiprocessing.spawn) on this host.

A process group is initialised from env:// (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), with Gloo on CPUs and NCCL on GPUs. Each rank takes the rows
rows(B, rank, world) of every global batch of B.
"""
import os
import signal
import socket
import sys

import torch.distributed as tdist
import torch.multiprocessing as mp

ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class Topology:
    """Where this process sits: rank of world processes, local_rank of
    local_world on this host."""

    def __init__(self, rank=0, world=1, local_rank=0, local_world=1):
        self.rank, self.world, self.local_rank, self.local_world = rank, world, local_rank, local_world


def from_env():
    """The Topology of torchrun's variables, or None when WORLD_SIZE is unset."""
    if "WORLD_SIZE" not in os.environ:
        return None
    missing = [k for k in ENV if k not in os.environ]
    if missing:
        raise ValueError(f"WORLD_SIZE is set but {', '.join(missing)} not: start under torchrun, or use --nproc N")
    vals = {}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        v = os.environ.get(k)
        if v is None:
            continue
        try:
            vals[k] = int(v)
        except ValueError:
            raise ValueError(f"{k}={v!r}: want an integer") from None
    rank, world = vals["RANK"], vals["WORLD_SIZE"]
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"RANK={rank}, WORLD_SIZE={world}: want 0 ≤ RANK < WORLD_SIZE")
    return Topology(rank, world, vals.get("LOCAL_RANK", rank), vals.get("LOCAL_WORLD_SIZE", world))


def rows(B, rank, world):
    """The rows of a global batch of B that rank reads: a contiguous range."""
    return range(rank * B // world, (rank + 1) * B // world)


def init(topo, device_type):
    """Joins the process group (all ranks rendezvous here)."""
    if topo.world > 1:
        tdist.init_process_group("nccl" if device_type == "cuda" else "gloo", init_method="env://",
                                 rank=topo.rank, world_size=topo.world)


def finish(topo):
    if topo.world > 1 and tdist.is_initialized():
        tdist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(fn, n, args):
    """Runs fn(rank, *args) in n new processes on this host, rendezvousing
    at 127.0.0.1 on a free port. SIGTERM is passed on to them; SIGINT is
    not (a terminal's Ctrl-C reaches the whole process group already).
    Returns 0 when all ended well, else the first failure's exit code (a
    process that raised has its traceback printed)."""
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(free_port())
    ctx = mp.spawn(fn, args=args, nprocs=n, join=False)

    def forward(signum, frame):
        for p in ctx.processes:
            if p.is_alive():
                os.kill(p.pid, signum)

    old = {signal.SIGTERM: signal.signal(signal.SIGTERM, forward),
           signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN)}
    try:
        while not ctx.join():
            pass
    except mp.ProcessRaisedException as e:
        print(e, file=sys.stderr)
        return 1
    except mp.ProcessExitedException as e:
        return e.exit_code if e.exit_code and e.exit_code > 0 else 1
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 0
