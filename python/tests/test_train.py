"""python -m tokenmix_torch.train: 2 processes over Gloo make the updates 1
process makes on the combined batch (weights after every step, 1e-5 per
tensor), a 2-process run stopped after step 15 and resumed ends with the
same bytes as an uninterrupted one, and the 2-process runs are served by
Go: `tokenmix eval` reports the validation loss PyTorch reported (1e-4),
`tokenmix predict` gives the logits PyTorch gives (1e-4). Bad input is a
one-line error, never a traceback."""
import contextlib
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.dirname(HERE)
sys.path[:0] = [HERE, PY]
import gobin  # noqa: E402
import tokenmix_torch  # noqa: E402
from tokenmix_torch import st  # noqa: E402
from tokenmix_torch.train import __main__ as cli  # noqa: E402

STEPS, STOP = 30, 15
TRAIN = {"batch_size": 4, "steps": STEPS, "lr": 3e-3, "warmup": 5, "weight_decay": 0.1, "log_every": 5,
         "checkpoint_every": 1, "keep_checkpoints": STEPS, "seed": 3}
LM = {"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 16, "causal": True,
      "task": "lm", "mixer": {"kind": "full"}, "train": dict(TRAIN, eval_every=10, eval_batches=2)}
CLS = {"vocab_size": 16, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 12, "causal": False,
       "task": "classify", "n_classes": 3, "pad_id": 0, "mixer": {"kind": "fixed", "block": 3, "summary": 1},
       "train": dict(TRAIN, eval_every=10, eval_batches=100)}
TEXT = "".join(f"{i} bottles of beer on the wall, {i} bottles of beer; take one down, pass it around. "
               for i in range(40, 0, -1))
TOL, TOL_GO = 1e-5, 1e-4


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def train(*args):
    """Runs the command; returns its stdout (the last line parsed as JSON with --json)."""
    env = dict(os.environ, PYTHONPATH=PY + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "tokenmix_torch.train", "--threads", "1", *args],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise AssertionError(f"train {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def weights(run, step):
    return st.load(os.path.join(run, "ckpt", f"{step:08d}", "weights.safetensors"))[0]


def worst(got, want):
    """The largest per-tensor error max|a−b| / max|b| and its tensor. A
    mixer's k.bias has a zero gradient in exact arithmetic (softmax is
    invariant to a constant added to a score row), so its trained values are
    round-off noise: it is measured against the model's largest weight."""
    wmax = max(v.abs().max().item() for v in want.values())
    errs = {}
    for k, b in want.items():
        d = (got[k].double() - b.double()).abs().max().item()
        errs[k] = d / (wmax if k.endswith("mixer.k.bias") else max(b.abs().max().item(), 1e-30))
    return max((e, k) for k, e in errs.items())


def setup_data(cls):
    """Gives cls a temporary directory (d, tmp) with the lm's text, the
    classifier's JSONL lines (cls_train, cls_val; val_recs) and the two
    configs (cfg["lm"], cfg["cls"]); gobin.binary() is found first."""
    gobin.binary()
    cls.tmp = tempfile.TemporaryDirectory()
    d = cls.d = cls.tmp.name
    cls.text = write(os.path.join(d, "text.txt"), TEXT)
    r = random.Random(1)
    recs = [{"tokens": [r.randint(1, 15) for _ in range(r.randint(3, 12))], "label": r.choice("abc")}
            for _ in range(60)]
    cls.cls_train = write(os.path.join(d, "train.jsonl"), "".join(json.dumps(x) + "\n" for x in recs[:48]))
    cls.cls_val = write(os.path.join(d, "val.jsonl"), "".join(json.dumps(x) + "\n" for x in recs[48:]))
    cls.val_recs = recs[48:]
    cls.cfg = {t: write(os.path.join(d, t + ".json"), json.dumps(c)) for t, c in (("lm", LM), ("cls", CLS))}


class Distributed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_data(cls)
        d = cls.d
        cls.runs, cls.out = {}, {}
        for name, cfg, data in (("lm", cls.cfg["lm"], ["--data", cls.text]),
                                ("cls", cls.cfg["cls"], ["--data", cls.cls_train, "--val", cls.cls_val])):
            for n in (1, 2):
                run = cls.runs[name, n] = os.path.join(d, f"{name}-{n}")
                cls.out[name, n] = json.loads(train("--config", cfg, *data, "--out", run, "--nproc", str(n),
                                                    "--json").splitlines()[-1])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_equivalence(self):
        top = (0,)
        for name in ("lm", "cls"):
            for step in range(1, STEPS + 1):
                err, k = worst(weights(self.runs[name, 2], step), weights(self.runs[name, 1], step))
                self.assertLessEqual(err, TOL, f"{name}, step {step}: {k}")
                top = max(top, (err, name, step, k))
            self.assertEqual(self.out[name, 2]["processes"], 2)
            self.assertAlmostEqual(self.out[name, 2]["val_loss"], self.out[name, 1]["val_loss"], delta=TOL)
        if os.environ.get("TOKENMIX_REPORT"):
            print(f"\nworst per-tensor error over every step: {top}", file=sys.stderr)

    def test_resume(self):
        run = os.path.join(self.d, "lm-2-resumed")
        out = train("--config", self.cfg["lm"], "--data", self.text, "--out", run, "--nproc", "2", "--stop-at",
                    str(STOP))
        self.assertEqual(tokenmix_torch.load_run(run).step, STOP, out)
        train("--resume", "--data", self.text, "--out", run, "--nproc", "2")
        for f in ("weights.safetensors", "optim.safetensors"):
            with open(os.path.join(run, "ckpt", f"{STEPS:08d}", f), "rb") as a, \
                    open(os.path.join(self.runs["lm", 2], "ckpt", f"{STEPS:08d}", f), "rb") as b:
                self.assertEqual(a.read(), b.read(), f)
        with open(os.path.join(run, "metrics.jsonl")) as f:
            self.assertEqual([json.loads(line)["step"] for line in f], [5, 10, 15, 20, 25, 30])

    def test_served_from_go(self):
        # Classifier: `tokenmix eval` on the validation lines PyTorch evaluated at the last step.
        run = self.runs["cls", 2]
        ev = json.loads(gobin.run("eval", "--run", run, "--data", self.cls_val, "--json"))
        self.assertLessEqual(abs(ev["loss"] - self.out["cls", 2]["val_loss"]), TOL_GO * ev["loss"])
        model = tokenmix_torch.load_run(run)
        out = gobin.run("predict", "--run", run, "--input", self.cls_val)
        for line, rec in zip(out.splitlines(), self.val_recs):
            with torch.no_grad():
                p = torch.softmax(model(torch.tensor([rec["tokens"]])).double(), -1)[0]
            got = torch.tensor(json.loads(line)["probs"], dtype=torch.float64)
            self.assertLessEqual((got - p).abs().max().item() / p.abs().max().item(), TOL_GO)
        # Language model: `tokenmix predict`'s log-probabilities of each next byte.
        run = self.runs["lm", 2]
        model = tokenmix_torch.load_run(run)
        lines = ["7 bottles of", "take one down"]
        out = gobin.run("predict", "--run", run, "--input", write(os.path.join(self.d, "l.txt"), "\n".join(lines)))
        for line, res in zip(lines, out.splitlines()):
            toks = torch.tensor([list(line.encode())])
            with torch.no_grad():
                lp = torch.log_softmax(model(toks).double(), -1)[0, :-1].gather(1, toks[0, 1:, None])[:, 0]
            got = torch.tensor(json.loads(res)["log_probs"], dtype=torch.float64)
            self.assertLessEqual((got - lp).abs().max().item() / lp.abs().max().item(), TOL_GO, line)


class BF16(unittest.TestCase):
    def test_bf16_autocast(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = write(os.path.join(d, "c.json"), json.dumps(dict(LM, train=dict(LM["train"], steps=3, eval_every=3))))
            out = json.loads(train("--config", cfg, "--data", write(os.path.join(d, "t.txt"), TEXT), "--out",
                                   os.path.join(d, "run"), "--bf16", "--json").splitlines()[-1])
            self.assertEqual(out["steps"], 3)
            self.assertTrue(0 < out["val_loss"] < 10, out)
            self.assertEqual(tokenmix_torch.load_run(os.path.join(d, "run")).step, 3)


class Errors(unittest.TestCase):
    """User errors are one line naming the problem, exit code 1 (2 for flags)."""

    def run_cli(self, *args):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as e:  # argparse
                code = e.code
        return code, err.getvalue()

    def test_errors(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = write(os.path.join(d, "c.json"), json.dumps(LM))
            text = write(os.path.join(d, "t.txt"), TEXT)
            odd = write(os.path.join(d, "odd.json"), json.dumps(dict(LM, train=dict(LM["train"], batch_size=3))))
            half = write(os.path.join(d, "half.json"), json.dumps(dict(LM, precision="fp16")))
            bad = write(os.path.join(d, "bad.jsonl"), '{"tokens": [1, 2], "label": "a"}\n{"tokens": "x"}\n')
            cases = [
                (("--config", cfg, "--data", os.path.join(d, "none.txt"), "--out", d + "/r"), "none.txt"),
                (("--config", os.path.join(d, "none.json"), "--data", text, "--out", d + "/r"), "none.json"),
                (("--config", odd, "--data", text, "--out", d + "/r", "--nproc", "2"), "batch_size 3"),
                (("--config", cfg, "--data", text, "--out", d, "--resume"), "holds no run"),
                (("--config", write(os.path.join(d, "cls.json"), json.dumps(CLS)), "--data", bad, "--out", d + "/r"),
                 "bad.jsonl:2"),
                (("--config", cfg, "--data", text, "--out", d + "/r", "--nproc", "0"), "--nproc"),
                (("--config", cfg, "--data", text, "--out", d + "/r", "--bogus"), "--bogus"),
                (("--config", half, "--data", text, "--out", d + "/r"), 'precision "fp16"'),
            ]
            for args, want in cases:
                with self.subTest(want=want):
                    code, msg = self.run_cli(*args)
                    self.assertIn(code, (1, 2))
                    self.assertIn(want, msg)
                    self.assertNotIn("Traceback", msg)
            self.assertFalse(os.path.exists(os.path.join(d, "r")))


if __name__ == "__main__":
    unittest.main()
