"""Self-pretraining (train.pretrain) in tokenmix_torch.train, as Go's
train.Run runs it: the config's pretrain object is checked as Go checks it;
the mlm masks are Go's (pinned as in Go's TestMaskPinned); a run pretrains
with mlm, then fine-tunes, with the weight names pretrain_head.* in the
pretraining checkpoints and head.* after the switch, the stage in every
metrics line and state.json; a run stopped in either stage and resumed ends
with the same bytes; 2 processes make the updates 1 process makes (1e-5);
and the runs cross over to Go: Go resumes a run this trainer stopped in
pretraining, loads its finished runs, and this package loads Go's."""
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.dirname(HERE)
sys.path[:0] = [HERE, PY]
import gobin  # noqa: E402
import tokenmix_torch  # noqa: E402
from tokenmix_torch import config as cfgmod  # noqa: E402
from tokenmix_torch import rng, st  # noqa: E402
from tokenmix_torch.train import pretrain  # noqa: E402

PRE, STEPS = 5, 6
CLS = {"vocab_size": 16, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 12, "causal": False,
       "task": "classify", "n_classes": 3, "pad_id": 0, "mixer": {"kind": "full"},
       "train": {"batch_size": 4, "steps": STEPS, "lr": 0.003, "warmup": 2, "log_every": 2, "eval_every": 3,
                 "eval_batches": 2, "checkpoint_every": 2, "keep_checkpoints": 20, "seed": 4,
                 "pretrain": {"objective": "mlm", "steps": PRE, "mask_id": 15, "mask_rate": 0.3, "lr": 0.005,
                              "warmup": 1}}}
TOL = 1e-5


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


def ckpt(run, step, name="weights.safetensors"):
    return os.path.join(run, "ckpt", f"{step:08d}", name)


def metrics(run):
    with open(os.path.join(run, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def without_timing(ms):
    return [{k: v for k, v in m.items() if k not in ("tokens_per_s", "elapsed_s", "train_s")} for m in ms]


class Config(unittest.TestCase):
    def test_errors(self):
        def cfg(pre, **top):
            c = json.loads(json.dumps(CLS))
            c["train"]["pretrain"] = pre
            c.update(top)
            return c
        for c, want in [
            (cfg(None), "train.pretrain: want a JSON object, got null"),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": 15, "masking": "bert"}), "train.pretrain.masking: unknown key"),
            (cfg({"steps": 5, "mask_id": 15}), "train.pretrain.objective: required"),
            (cfg({"objective": "denoise", "steps": 5}), 'train.pretrain.objective: must be "mlm" or "lm", got \'denoise\''),
            (cfg({"objective": "mlm", "mask_id": 15}), "train.pretrain.steps: required"),
            (cfg({"objective": "mlm", "steps": "5", "mask_id": 15}), "train.pretrain.steps: want an integer"),
            (cfg({"objective": "mlm", "steps": 0, "mask_id": 15}), "train.pretrain.steps: must be ≥ 1, got 0"),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": None}), "train.pretrain.mask_id: want an integer, got null"),
            (cfg({"objective": "mlm", "steps": 5}), 'train.pretrain.mask_id: required for objective "mlm"'),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": 16}), "train.pretrain.mask_id: must be in [0, vocab_size=16), got 16"),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": 0}), "train.pretrain.mask_id: must differ from pad_id (0)"),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": 15, "mask_rate": 0}), "train.pretrain.mask_rate: must be in (0, 1]"),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": 15, "lr": 0.001, "min_lr": 0.002}), "train.pretrain.min_lr: must be in [0, lr=0.001]"),
            (cfg({"objective": "lm", "steps": 5}), 'train.pretrain.objective: "lm" needs a causal model (causal: true)'),
            (cfg({"objective": "lm", "steps": 5, "mask_rate": 0.2}, causal=True), 'train.pretrain.mask_rate: only for objective "mlm"'),
            (cfg({"objective": "mlm", "steps": 5, "mask_id": 15}, causal=True), 'train.pretrain.objective: "mlm" needs a bidirectional model'),
        ]:
            with self.assertRaises(ValueError, msg=want) as e:
                cfgmod.check(c)
            self.assertIn(want, str(e.exception))
        # Defaults: mask_rate 0.15, the schedule from train.
        c = cfgmod.train(cfgmod.check(cfg({"objective": "mlm", "steps": 7, "mask_id": 15})))
        self.assertEqual(c["pretrain"], {"objective": "mlm", "steps": 7, "mask_rate": 0.15, "mask_id": 15,
                                         "lr": 0.003, "min_lr": 0.0, "warmup": 2})

    def test_stage_model(self):
        m = tokenmix_torch.Model(CLS, stage="pretrain")
        names = dict((k, list(v.shape)) for k, v in m.state_dict().items())
        self.assertEqual(names["pretrain_head.weight"], [16, 16])
        self.assertEqual(names["pretrain_head.bias"], [16])
        self.assertNotIn("head.weight", names)
        self.assertEqual(list(m(torch.tensor([[1, 2, 3]])).shape), [1, 3, 16])
        body = {k for k in names if not k.startswith("pretrain_head.")}
        self.assertEqual(body, {k for k in tokenmix_torch.Model(CLS).state_dict() if not k.startswith("head.")})


class Masks(unittest.TestCase):
    def test_pinned(self):
        # Go's TestMaskPinned: seed 1, step 0, rate 0.25, 24 tokens, no padding.
        m = rng.mask_positions(rng.mask_key(1, 0), np.ones(24, bool), 0.25)
        self.assertEqual(list(np.flatnonzero(m)), [3, 6, 8, 11, 13, 14, 15])

    def test_batch(self):
        tok = torch.tensor([[3, 4, 0, 0], [5, 6, 7, 0]])
        pc = {"objective": "mlm", "mask_rate": 0.01, "mask_id": 9}
        for step in range(50):
            t, y = pretrain.batch(tok, {"pad_id": 0}, pc, 2, step)
            self.assertEqual(int((y != -1).sum()), 1)  # at least one, the pad never
            self.assertTrue(((y == -1) | (tok != 0)).all())
            self.assertTrue(torch.equal(torch.where(y != -1, y, t), tok))
        t, y = pretrain.batch(tok, {"pad_id": 0}, {"objective": "lm"}, 2, 0)
        self.assertTrue(torch.equal(t, tok))
        self.assertEqual(y.tolist(), [[4, -1, -1, -1], [6, 7, -1, -1]])


class Runs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        gobin.binary()
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.d = cls.tmp.name
        r = random.Random(2)
        recs = [{"tokens": [r.randint(1, 13) for _ in range(r.randint(3, 11))], "label": r.choice("abc")}
                for _ in range(40)]
        cls.data = write(os.path.join(d, "train.jsonl"), "".join(json.dumps(x) + "\n" for x in recs))
        cls.cfg = write(os.path.join(d, "c.json"), json.dumps(CLS))
        cls.runs = {}
        for n in (1, 2):
            run = cls.runs[n] = os.path.join(d, f"run{n}")
            cls.out = json.loads(train("--config", cls.cfg, "--data", cls.data, "--out", run, "--nproc", str(n),
                                       "--json").stdout.splitlines()[-1])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_stages(self):
        run, last = self.runs[1], PRE + STEPS
        self.assertEqual((self.out["steps"], self.out["pretrain_steps"]), (STEPS, PRE))
        ms = metrics(run)
        self.assertEqual([(m["step"], m["stage"], "head_swap" in m) for m in ms],
                         [(2, "pretrain", False), (4, "pretrain", False), (5, "pretrain", False), (5, "train", True),
                          (7, "train", False), (8, "train", False), (9, "train", False), (11, "train", False)])
        self.assertEqual(ms[3]["head_swap"], {"dropped": ["pretrain_head.weight", "pretrain_head.bias"],
                                              "initialised": ["head.weight", "head.bias"]})
        self.assertEqual([("val_loss" in m) for m in ms], [False] * 5 + [True, False, True])
        self.assertEqual(ms[0]["lr"], 0.005)  # each stage its own schedule
        self.assertEqual(ms[4]["lr"], 0.003)
        pre, _ = st.load(ckpt(run, PRE))
        self.assertEqual(list(pre["pretrain_head.weight"].shape), [16, 16])
        self.assertNotIn("head.weight", pre)
        fin, _ = st.load(ckpt(run, last))
        self.assertEqual(list(fin["head.weight"].shape), [3, 16])
        self.assertNotIn("pretrain_head.weight", fin)
        with open(ckpt(run, PRE, "state.json")) as f:
            self.assertEqual(json.load(f)["stage"], "pretrain")
        with open(ckpt(run, last, "state.json")) as f:
            s = json.load(f)
        self.assertEqual((s["stage"], s["stage_start"]), ("train", PRE))
        _, meta = st.load(ckpt(run, last, "optim.safetensors"))
        self.assertEqual(meta["step"], str(STEPS))  # the fine-tuning optimizer's own count
        with self.assertRaisesRegex(ValueError, "pretraining stage"):
            tokenmix_torch.load_run(run, checkpoint=PRE)
        self.assertEqual(tokenmix_torch.load_run(run).step, last)

    def test_processes(self):
        # A mixer's k.bias has a zero gradient in exact arithmetic, so it is
        # measured against the model's largest weight (as test_train does).
        for step in (2, 4, PRE, 7, 9, PRE + STEPS):
            a, _ = st.load(ckpt(self.runs[2], step))
            b, _ = st.load(ckpt(self.runs[1], step))
            self.assertEqual(set(a), set(b))
            wmax = max(v.abs().max().item() for v in b.values())
            for k in b:
                scale = wmax if k.endswith("mixer.k.bias") else max(b[k].abs().max().item(), 1e-30)
                err = (a[k].double() - b[k].double()).abs().max().item() / scale
                self.assertLessEqual(err, TOL, f"step {step}: {k}")

    def test_resume(self):
        for stops in ((3,), (8,), (3, PRE)):
            run = os.path.join(self.d, "resumed-" + "-".join(map(str, stops)))
            train("--config", self.cfg, "--data", self.data, "--out", run, "--stop-at", str(stops[0]))
            for s in stops[1:]:
                train("--resume", "--data", self.data, "--out", run, "--stop-at", str(s))
            train("--resume", "--data", self.data, "--out", run)
            for f in ("weights.safetensors", "optim.safetensors"):
                with open(ckpt(run, PRE + STEPS, f), "rb") as a, open(ckpt(self.runs[1], PRE + STEPS, f), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"{stops}: {f}")
            self.assertEqual(without_timing(metrics(run)), without_timing(metrics(self.runs[1])), stops)

    def test_go(self):
        # Go resumes a run stopped in pretraining, through the switch.
        run = os.path.join(self.d, "to-go")
        train("--config", self.cfg, "--data", self.data, "--out", run, "--stop-at", "3")
        gobin.run("train", "--resume", "--data", self.data, "--out", run)
        ms = metrics(run)
        self.assertEqual([m["stage"] for m in ms if "head_swap" in m], ["train"])
        self.assertEqual(ms[-1]["step"], PRE + STEPS)
        with open(ckpt(run, PRE + STEPS, "state.json")) as f:
            s = json.load(f)
        self.assertEqual((s["stage"], s["stage_start"]), ("train", PRE))
        # Go serves this trainer's finished run, with the logits computed here.
        ev = json.loads(gobin.run("eval", "--run", self.runs[1], "--data", self.data, "--json"))
        model = tokenmix_torch.load_run(self.runs[1])
        with open(self.data) as f:
            recs = [json.loads(line) for line in f]
        with torch.no_grad():
            losses = [model.loss(model(torch.tensor([r["tokens"]])).double(), torch.tensor(["abc".index(r["label"])])).item()
                      for r in recs]
        self.assertLessEqual(abs(ev["loss"] - sum(losses) / len(losses)), 1e-4 * ev["loss"])
        # And this package loads Go's pretrained run, refusing its pretraining checkpoint.
        grun = os.path.join(self.d, "go")
        gobin.run("train", "--config", self.cfg, "--data", self.data, "--out", grun)
        self.assertEqual(tokenmix_torch.load_run(grun).step, PRE + STEPS)
        with self.assertRaisesRegex(ValueError, "pretraining stage"):
            tokenmix_torch.load_run(grun, checkpoint=PRE)

    def test_mask_in_data(self):
        bad = write(os.path.join(self.d, "bad.jsonl"), '{"tokens": [1, 2], "label": "a"}\n'
                    '{"tokens": [3, 15], "label": "b"}\n{"tokens": [4], "label": "c"}\n')
        p = train("--config", self.cfg, "--data", bad, "--out", os.path.join(self.d, "bad"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("uses token 15, the config's train.pretrain.mask_id", p.stderr)


if __name__ == "__main__":
    unittest.main()
