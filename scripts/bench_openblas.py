#!/usr/bin/python3
"""Time OpenBLAS float32 GEMM (numpy matmul) on the shapes of `tokenmix bench gemm`.

Run with Debian's interpreter, numpy and OpenBLAS
(apt-get install python3-numpy libopenblas0-pthread):

    /usr/bin/python3 scripts/bench_openblas.py [--threads-list 1,2] [--reps 7] [--trans NN]

It prints one JSON object per line, in the format of `tokenmix bench gemm --json`
with "op":"openblas". Each thread count runs in its own subprocess with
OPENBLAS_NUM_THREADS set and OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed, so
OpenBLAS picks its own kernel for this CPU. Every figure is the median of --reps
samples after a warm-up; a sample repeats the product for at least 20 ms.

On a shared, noisy machine, compare with tokenmix in the same run:

    go build -o /tmp/tokenmix ./cmd/tokenmix
    /usr/bin/python3 scripts/bench_openblas.py --tokenmix /tmp/tokenmix --rounds 3

alternates OpenBLAS, `tokenmix bench gemm --json` and `tokenmix bench peak --json`
per thread count, --rounds times, prints every JSON line, and ends with two tables,
the median and the best over the rounds: tokenmix, OpenBLAS, their ratio, and
tokenmix as a fraction of the FMA peak.

With --clock cpu every figure is one thread timed by that thread's CPU time
(time.thread_time, CLOCK_THREAD_CPUTIME_ID), which other processes on a busy
machine barely disturb; the default wall clock is what a user sees.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [(512, 512, 512), (1024, 256, 256), (2048, 2048, 64), (2048, 64, 2048), (4096, 1024, 256)]
SAMPLE_SECONDS = 0.02


def worker(threads, reps, trans, clock):
    """Measure every shape in this process (OPENBLAS_NUM_THREADS already set)."""
    now = time.thread_time if clock == "cpu" else time.perf_counter
    import numpy as np

    rng = np.random.default_rng(1)
    for m, n, k in SHAPES:
        a = rng.uniform(-1, 1, (k, m) if trans[0] == "T" else (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, k) if trans[1] == "T" else (k, n)).astype(np.float32)
        opa = a.T if trans[0] == "T" else a
        opb = b.T if trans[1] == "T" else b
        c = np.empty((m, n), dtype=np.float32)

        def run():
            np.matmul(opa, opb, out=c)

        run()
        check_openblas()
        calls, t0 = 1, now()
        while now() - t0 < SAMPLE_SECONDS:
            run()
            calls += 1
        ts = []
        for _ in range(reps):
            t0 = now()
            for _ in range(calls):
                run()
            ts.append((now() - t0) / calls)
        sec = statistics.median(ts)
        r = {"op": "openblas", "m": m, "n": n, "k": k, "trans": trans,
             "threads": threads, "gflops": 2.0 * m * n * k / sec / 1e9}
        if clock == "cpu":
            r["clock"] = "thread-cpu"
        print(json.dumps(r), flush=True)


def check_openblas():
    """Exit unless this process runs OpenBLAS (Debian numpy uses whatever
    libblas.so.3 the alternatives system selects, possibly reference BLAS)."""
    with open("/proc/self/maps") as f:
        if "openblas" not in f.read():
            sys.exit("bench_openblas.py: numpy is not running OpenBLAS; install it with "
                     "`apt-get install libopenblas0-pthread` (it becomes the libblas.so.3 alternative)")


def openblas(threads, reps, trans, clock):
    """Run worker in a subprocess with a clean OpenBLAS environment."""
    env = dict(os.environ)
    for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(v, None)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    p = subprocess.run([sys.executable, __file__, "--worker", "--threads-list", str(threads),
                        "--reps", str(reps), "--trans", trans, "--clock", clock],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(p.stderr.strip() or f"bench_openblas.py: worker failed with code {p.returncode}")
    out = p.stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def tokenmix(binary, threads, reps, trans, clock):
    out = subprocess.run([binary, "bench", "gemm", "--json", "--threads-list", str(threads),
                          "--reps", str(reps), "--trans", trans, "--clock", clock],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def tokenmix_peak(binary, threads, reps, clock):
    out = subprocess.run([binary, "bench", "peak", "--json", "--threads-list", str(threads),
                          "--reps", str(reps), "--clock", clock], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads-list", default="1,2")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--trans", default="NN", choices=["NN", "NT", "TN", "TT"])
    ap.add_argument("--tokenmix", help="tokenmix binary to measure in alternation with OpenBLAS")
    ap.add_argument("--rounds", type=int, default=1, help="alternations with --tokenmix")
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                    help="cpu: one thread timed by its CPU time (robust on a busy machine)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads_list.split(",")]
    if args.clock == "cpu":
        threads = [1]
    if args.worker:
        worker(threads[0], args.reps, args.trans, args.clock)
        return
    results = []
    for _ in range(max(1, args.rounds)):
        for t in threads:
            rs = openblas(t, args.reps, args.trans, args.clock)
            if args.tokenmix:
                rs += tokenmix(args.tokenmix, t, args.reps, args.trans, args.clock)
                rs += tokenmix_peak(args.tokenmix, t, args.reps, args.clock)
            for r in rs:
                print(json.dumps(r), flush=True)
            results += rs
    if not args.tokenmix:
        return
    med = {}
    for r in results:
        med.setdefault((r["op"], r.get("m"), r.get("n"), r.get("k"), r["threads"]), []).append(r["gflops"])
    # The median is the typical figure; the best round is the one least
    # disturbed by other processes on a shared machine.
    for name, agg in (("median", statistics.median), ("best", max)):
        print(f"\n{args.trans}, {args.clock} clock, {name} of {args.rounds} round(s), GFLOP/s", file=sys.stderr)
        print(f"{'M':>5} {'N':>5} {'K':>5} {'threads':>7} {'tokenmix':>9} {'OpenBLAS':>9} {'ratio':>6}"
              f" {'peak':>7} {'of peak':>7}", file=sys.stderr)
        for t in threads:
            peak = med.get(("peak", None, None, None, t))
            peak = agg(peak) if peak else float("nan")
            for m, n, k in SHAPES:
                g = agg(med[("gemm", m, n, k, t)])
                o = agg(med[("openblas", m, n, k, t)])
                print(f"{m:5d} {n:5d} {k:5d} {t:7d} {g:9.1f} {o:9.1f} {g / o:6.2f} {peak:7.1f} {g / peak:7.0%}",
                      file=sys.stderr)


if __name__ == "__main__":
    main()
