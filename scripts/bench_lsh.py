#!/usr/bin/env python3
"""LSH attention vs full attention, forward+backward time (issue 6 targets).

    python3 scripts/bench_lsh.py [--reps 3] [--lens 2048,8192] [--batch 1]

Runs `tokenmix bench mixer` (float32, one mixer layer, median of --reps) for
kind "lsh" (defaults: bucket_size 64, n_hashes 4) and kind "full" at d_model
256, 4 heads, causal, for each length, alternating the two kinds so that
load from other processes hits both alike. Prints forward, backward and
their sum in ms, the full/lsh speed-up per length and lsh's time ratio
between the longest and the shortest length (target: lsh faster than full
at T=8192, and T=8192 / T=2048 at most 5).

Notes:
- The numbers are only comparable within one run; on a shared machine
  report the ratios, not the absolute times.
- Full attention at T=8192 takes several seconds per pass; --reps 1 is
  enough for the ratios.
- No PyTorch needed; any python3 works.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config(kind, max_len):
    return {"vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 1, "d_ff": 1024,
            "max_len": max_len, "causal": True, "task": "lm", "mixer": {"kind": kind}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lens", default="2048,8192")
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    lens = [int(x) for x in a.lens.split(",")]
    tmp = tempfile.mkdtemp(prefix="bench_lsh")
    exe = os.path.join(tmp, "tokenmix")
    subprocess.run(["go", "build", "-o", exe, "./cmd/tokenmix"], cwd=ROOT, check=True)
    res = {}
    for T in lens:
        for kind in ("lsh", "full"):
            path = os.path.join(tmp, f"{kind}.json")
            with open(path, "w") as f:
                json.dump(config(kind, max(lens)), f)
            out = subprocess.run([exe, "bench", "mixer", "--config", path, "--len", str(T),
                                  "--batch", str(a.batch), "--reps", str(a.reps), "--json"],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            res[kind, T] = r
            print(f"{kind:5s} T={T:6d}: forward {r['fwd_ms']:9.1f} ms, backward {r['bwd_ms']:9.1f} ms, "
                  f"sum {r['fwd_ms'] + r['bwd_ms']:9.1f} ms, planned {r['planned_bytes'] / 2**20:8.1f} MiB",
                  flush=True)
    tot = {k: v["fwd_ms"] + v["bwd_ms"] for k, v in res.items()}
    for T in lens:
        print(f"T={T}: full / lsh = {tot['full', T] / tot['lsh', T]:.2f}")
    lo, hi = min(lens), max(lens)
    print(f"lsh T={hi} / T={lo} = {tot['lsh', hi] / tot['lsh', lo]:.2f} "
          f"(full: {tot['full', hi] / tot['full', lo]:.2f})")


if __name__ == "__main__":
    sys.exit(main())
