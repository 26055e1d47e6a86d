"""tokenmix_torch on a GPU; skipped where PyTorch sees none.

- Every parity case of test_parity_go, computed on CUDA, agrees with
  `tokenmix grad` within the same bounds (1e-4 in float32, 1e-3 for a
  zero-exact gradient, 1e-9 in float64).
- `--device cuda` training makes the updates the CPU makes: weights after
  every step within 1e-4 per tensor (round-off of other reduction orders,
  carried through AdamW), for an lm and a classifier.
- A cuda run stopped at step 15 and resumed ends within 1e-5 of the
  uninterrupted cuda run (GPU reductions are not bitwise repeatable).
- Go serves a cuda run: `tokenmix eval` reports PyTorch's validation loss
  within 1e-4.
- bf16 autocast on the GPU trains: the validation loss falls below the
  untrained model's.
"""
import json
import math
import os
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import gobin  # noqa: E402
import test_parity_go as tp  # noqa: E402
import test_train as tt  # noqa: E402
import tokenmix_torch  # noqa: E402
from tokenmix_torch import parity  # noqa: E402

TOL_STEP, TOL_RESUME = 1e-4, 1e-5


def no_tf32():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


@unittest.skipUnless(torch.cuda.is_available(), "PyTorch sees no GPU")
class CudaParity(unittest.TestCase):
    def test_every_case(self):
        gobin.binary()
        no_tf32()
        seen = {}
        for name, (cfg, T) in tp.CASES.items():
            with self.subTest(case=name), tempfile.TemporaryDirectory() as d:
                w, b = tp.prepare(d, cfg, T)
                rope = bool(cfg["mixer"].get("rope"))
                for f64, dt in ((False, torch.float32), (True, torch.float64)):
                    errs = parity.compare(parity.grad(cfg, w, b, dt, device="cuda"), tp.go_grad(d, f64), rope=rope)
                    tp.check(self, errs, dt, rope, "cuda " + name, seen)
        tp.report(seen, "cuda")


@unittest.skipUnless(torch.cuda.is_available(), "PyTorch sees no GPU")
class CudaTrain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tt.setup_data(cls)
        d = cls.d
        cls.data = {"lm": ["--data", cls.text], "cls": ["--data", cls.cls_train, "--val", cls.cls_val]}
        cls.runs, cls.out = {}, {}
        for name in ("lm", "cls"):
            for dev in ("cpu", "cuda"):
                run = cls.runs[name, dev] = os.path.join(d, f"{name}-{dev}")
                cls.out[name, dev] = json.loads(tt.train("--config", cls.cfg[name], *cls.data[name], "--out", run,
                                                         "--device", dev, "--json").splitlines()[-1])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_same_updates(self):
        top = (0,)
        for name in ("lm", "cls"):
            for step in range(1, tt.STEPS + 1):
                err, k = tt.worst(tt.weights(self.runs[name, "cuda"], step), tt.weights(self.runs[name, "cpu"], step))
                self.assertLessEqual(err, TOL_STEP, f"{name}, step {step}: {k}")
                top = max(top, (err, name, step, k))
            self.assertAlmostEqual(self.out[name, "cuda"]["val_loss"], self.out[name, "cpu"]["val_loss"],
                                   delta=TOL_STEP * self.out[name, "cpu"]["val_loss"])
        print(f"\ncuda against cpu, worst per-tensor error over every step: {top}", file=sys.stderr)

    def test_resume(self):
        run = os.path.join(self.d, "lm-cuda-resumed")
        tt.train("--config", self.cfg["lm"], *self.data["lm"], "--out", run, "--device", "cuda", "--stop-at",
                 str(tt.STOP))
        self.assertEqual(tokenmix_torch.load_run(run).step, tt.STOP)
        tt.train("--resume", *self.data["lm"], "--out", run, "--device", "cuda")
        err, k = tt.worst(tt.weights(run, tt.STEPS), tt.weights(self.runs["lm", "cuda"], tt.STEPS))
        print(f"\ncuda resumed against uninterrupted: {err:.2g} ({k})", file=sys.stderr)
        self.assertLessEqual(err, TOL_RESUME, k)

    def test_served_from_go(self):
        run = self.runs["cls", "cuda"]
        ev = json.loads(gobin.run("eval", "--run", run, "--data", self.cls_val, "--json"))
        self.assertLessEqual(abs(ev["loss"] - self.out["cls", "cuda"]["val_loss"]), tt.TOL_GO * ev["loss"])

    def test_bf16_autocast(self):
        cfg = dict(tt.LM, train=dict(tt.LM["train"], eval_every=tt.STEPS))
        path = tt.write(os.path.join(self.d, "bf16.json"), json.dumps(cfg))
        out = json.loads(tt.train("--config", path, *self.data["lm"], "--out", os.path.join(self.d, "bf16"),
                                  "--device", "cuda", "--bf16", "--json").splitlines()[-1])
        self.assertEqual(out["steps"], tt.STEPS)
        self.assertTrue(math.isfinite(out["val_loss"]) and out["val_loss"] < math.log(256), out)
        self.assertLess(abs(out["val_loss"] - self.out["lm", "cuda"]["val_loss"]), 0.2, out)


if __name__ == "__main__":
    unittest.main()
