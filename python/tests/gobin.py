"""Finding the tokenmix binary for the tests that compare with Go: $TOKENMIX_BIN,
or built once from this checkout with `go build` (skipped without Go)."""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BIN = None


def binary():
    global _BIN
    if _BIN:
        return _BIN
    env = os.environ.get("TOKENMIX_BIN")
    if env:
        _BIN = env
        return _BIN
    if shutil.which("go") is None or not os.path.exists(os.path.join(ROOT, "go.mod")):
        raise unittest.SkipTest("no tokenmix binary: set TOKENMIX_BIN or put go on PATH")
    d = tempfile.mkdtemp(prefix="tokenmix-bin-")
    out = os.path.join(d, "tokenmix")
    env = dict(os.environ, GOFLAGS=os.environ.get("GOFLAGS", "-buildvcs=false"))
    subprocess.run(["go", "build", "-o", out, "./cmd/tokenmix"], cwd=ROOT, check=True, env=env)
    _BIN = out
    return _BIN


def run(*args, stdin=None):
    """Runs the binary; returns stdout; raises with stderr on failure."""
    p = subprocess.run([binary(), *args], input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"tokenmix {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout
