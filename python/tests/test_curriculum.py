"""A length curriculum (train.curriculum) in tokenmix_torch.train, as Go's
train.Run runs it: the config's curriculum list is checked as Go checks it;
an lm on text trains each stage's updates on windows of the stage's length
and batch size drawn from the run's one random stream, so Go and this trainer
log the same tokens at every line; a run stopped inside the curriculum and
resumed ends with the same bytes; Go resumes a run this trainer stopped there
with the training losses this trainer logs (1e-4); 2 processes make the
updates 1 process makes (1e-5 of the largest weight), and a stage's batch
must split over them; and a classifier's curriculum is refused."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.dirname(HERE)
sys.path[:0] = [HERE, PY]
import gobin  # noqa: E402
import tokenmix_torch  # noqa: E402
from tokenmix_torch import config as cfgmod  # noqa: E402
from tokenmix_torch import st  # noqa: E402

STEPS = 12
CUR = [{"len": 6, "steps": 3, "batch_size": 8}, {"len": 10, "steps": 4}]
LM = {"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 16, "causal": True,
      "task": "lm", "mixer": {"kind": "full", "rope": True},
      "train": {"batch_size": 4, "steps": STEPS, "lr": 0.003, "warmup": 2, "log_every": 1, "eval_every": 4,
                "eval_batches": 2, "checkpoint_every": 2, "keep_checkpoints": 20, "seed": 6, "curriculum": CUR}}
TEXT = "".join(f"{i} green bottles hanging on the wall; and if one green bottle should accidentally fall. "
               for i in range(30, 0, -1))
TOL = 1e-4


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def train(*args, check=True):
    env = dict(os.environ, PYTHONPATH=PY + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "tokenmix_torch.train", "--threads", "1", *args],
                       capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"train {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def metrics(run):
    with open(os.path.join(run, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


class Config(unittest.TestCase):
    def test_errors(self):
        for cur, want in (
                ({}, "train.curriculum: want an array"),
                ([], "train.curriculum: empty"),
                ([{"len": 4}], r"train.curriculum\[0\].steps: required"),
                ([{"len": 4, "steps": 2, "size": 1}], r"train.curriculum\[0\].size: unknown key"),
                ([{"len": 4, "steps": "2"}], r"train.curriculum\[0\].steps: want an integer"),
                ([{"len": 4, "steps": 2}, {"len": 4, "steps": 2}], r"train.curriculum\[1\].len: must exceed"),
                ([{"len": 4, "steps": 2, "batch_size": 0}], r"train.curriculum\[0\].batch_size: must be ≥ 1"),
                ([{"len": 4, "steps": 12}], "train.curriculum: its stages take 12 updates, train.steps is 12"),
                ([{"len": 16, "steps": 2}], r"train.curriculum\[0\].len: 16 is not below the training length 16")):
            with self.subTest(cur=cur):
                with self.assertRaisesRegex(ValueError, want):
                    cfgmod.check(dict(LM, train=dict(LM["train"], curriculum=cur)))

    def test_resolved(self):
        tc = cfgmod.train(LM)
        self.assertEqual(tc["curriculum"], [{"len": 6, "steps": 3, "batch_size": 8},
                                            {"len": 10, "steps": 4, "batch_size": 4}])


class Runs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        gobin.binary()
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.d = cls.tmp.name
        cls.text = write(os.path.join(d, "text.txt"), TEXT)
        cls.cfg = write(os.path.join(d, "lm.json"), json.dumps(LM))
        cls.trun = os.path.join(d, "torch")
        train("--config", cls.cfg, "--data", cls.text, "--out", cls.trun)
        cls.go = os.path.join(d, "go")
        gobin.run("train", "--config", cls.cfg, "--data", cls.text, "--out", cls.go)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_same_as_go(self):
        # Tokens per step follow the stages: 3 steps of 8×6, 4 of 4×10, then 4×16.
        want = [0]
        for s in range(STEPS):
            want.append(want[-1] + (48 if s < 3 else 40 if s < 7 else 64))
        for run in (self.trun, self.go):
            ms = [m for m in metrics(run) if "loss" in m]
            self.assertEqual([m["tokens"] for m in ms], want[1:], run)

    def test_resume(self):
        for stop in (2, 5):
            run = os.path.join(self.d, f"resumed-{stop}")
            train("--config", self.cfg, "--data", self.text, "--out", run, "--stop-at", str(stop))
            train("--resume", "--data", self.text, "--out", run)
            for f in ("weights.safetensors", "optim.safetensors"):
                with open(os.path.join(run, "ckpt", f"{STEPS:08d}", f), "rb") as a, \
                        open(os.path.join(self.trun, "ckpt", f"{STEPS:08d}", f), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"stopped at {stop}: {f}")

    def test_go_resumes(self):
        run = os.path.join(self.d, "to-go")
        train("--config", self.cfg, "--data", self.text, "--out", run, "--stop-at", "4")
        gobin.run("train", "--resume", "--data", self.text, "--out", run)
        # From step 4 on, Go draws the batches this trainer drew in its
        # uninterrupted run: the training losses agree. (The validation
        # losses are not compared: Go scores the validation text's first
        # windows in order, this trainer random ones.)
        a, b = metrics(run), metrics(self.trun)
        self.assertEqual([m["tokens"] for m in a], [m["tokens"] for m in b])
        for x, y in zip(a[4:], b[4:]):
            self.assertLessEqual(abs(x["loss"] - y["loss"]), TOL * abs(y["loss"]), f"step {y['step']}")
        self.assertEqual(tokenmix_torch.load_run(run).step, STEPS)

    def test_processes(self):
        # 2 processes make the updates 1 process makes, through the stages
        # (every batch of the curriculum splits over them).
        run = os.path.join(self.d, "two")
        train("--config", self.cfg, "--data", self.text, "--out", run, "--nproc", "2")
        path = os.path.join("ckpt", f"{STEPS:08d}", "weights.safetensors")
        got, want = st.load(os.path.join(run, path))[0], st.load(os.path.join(self.trun, path))[0]
        wmax = max(v.abs().max().item() for v in want.values())
        for k, w in want.items():
            self.assertLessEqual((got[k].double() - w.double()).abs().max().item(), 1e-5 * wmax, k)
        self.assertEqual([m["tokens"] for m in metrics(run)], [m["tokens"] for m in metrics(self.trun)])

    def test_stage_batch_splits(self):
        cfg = write(os.path.join(self.d, "odd.json"),
                    json.dumps(dict(LM, train=dict(LM["train"], curriculum=[{"len": 6, "steps": 2, "batch_size": 3}]))))
        p = train("--config", cfg, "--data", self.text, "--out", os.path.join(self.d, "odd"), "--nproc", "2",
                  check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("train.curriculum[0].batch_size 3 does not split over 2 processes", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_classifier_refused(self):
        cls = {"vocab_size": 16, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 12,
               "task": "classify", "n_classes": 2, "pad_id": 0, "mixer": {"kind": "full"},
               "train": {"batch_size": 2, "steps": 4, "curriculum": [{"len": 4, "steps": 1}]}}
        cfg = write(os.path.join(self.d, "cls.json"), json.dumps(cls))
        data = write(os.path.join(self.d, "cls.jsonl"), '{"tokens": [1, 2, 3], "label": "a"}\n'
                     '{"tokens": [4, 5], "label": "b"}\n' * 4)
        p = train("--config", cfg, "--data", data, "--out", os.path.join(self.d, "cls-run"), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("train.curriculum", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        with self.assertRaisesRegex(AssertionError, "train.curriculum needs data that has shorter forms"):
            gobin.run("train", "--config", cfg, "--data", data, "--out", os.path.join(self.d, "cls-go"))


if __name__ == "__main__":
    unittest.main()
