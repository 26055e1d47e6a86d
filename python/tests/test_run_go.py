"""Run directories both ways with tokenmix's Go engine: a run trained by
`tokenmix train` loads here with the logits Go computes, and a run written
by save_run loads in Go (`tokenmix predict`, which uses tokenmix.Load, and
`tokenmix eval`) with the logits computed here (1e-4)."""
import json
import os
import random
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import gobin  # noqa: E402
import tokenmix_torch  # noqa: E402
from tokenmix_torch import parity, st  # noqa: E402

TOL = 1e-4
CLS = {"vocab_size": 16, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 12, "causal": False,
       "task": "classify", "n_classes": 3, "pad_id": 0, "mixer": {"kind": "fixed", "block": 3, "summary": 1},
       "train": {"batch_size": 4, "steps": 3, "eval_every": 0, "seed": 2}}
LM = {"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 24, "causal": True,
      "task": "lm", "mixer": {"kind": "lsh", "bucket_size": 4, "n_hashes": 2},
      "train": {"batch_size": 2, "seq_len": 16, "steps": 3, "eval_every": 0, "seed": 5}}
TEXT = "the quick brown fox jumps over the lazy dog. " * 20
LINES = ["the lazy dog", "a quick brown fox jumped"]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def cls_data(d):
    r = random.Random(0)
    recs = [{"tokens": [r.randint(1, 15) for _ in range(r.randint(3, 10))], "label": r.choice("abc")}
            for _ in range(12)]
    return recs, write(os.path.join(d, "cls.jsonl"), "".join(json.dumps(x) + "\n" for x in recs))


def rel(a, b):
    return (torch.as_tensor(a, dtype=torch.float64) - torch.as_tensor(b, dtype=torch.float64)).abs().max().item() / \
        max(torch.as_tensor(b, dtype=torch.float64).abs().max().item(), 1e-30)


class RunRoundTrip(unittest.TestCase):
    def setUp(self):
        gobin.binary()
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def check_cls(self, run, recs, model):
        """Go's predict and eval on run against model's logits."""
        out = gobin.run("predict", "--run", run, "--input", os.path.join(self.d, "cls.jsonl"))
        got = [json.loads(line)["probs"] for line in out.splitlines()]
        losses = []
        with torch.no_grad():
            for g, r in zip(got, recs):
                logits = model(torch.tensor([r["tokens"]]))
                self.assertLessEqual(rel(g, torch.softmax(logits.double(), -1)[0]), TOL)
                y = sorted("abc").index(r["label"])
                losses.append(model.loss(logits.double(), torch.tensor([y])).item())
        ev = json.loads(gobin.run("eval", "--run", run, "--data", os.path.join(self.d, "cls.jsonl"), "--json"))
        self.assertLessEqual(abs(ev["loss"] - sum(losses) / len(losses)) / ev["loss"], TOL)

    def check_lm(self, run, model):
        """Go's predict (log-probabilities of each next byte) against model."""
        out = gobin.run("predict", "--run", run, "--input", write(os.path.join(self.d, "lines.txt"),
                                                                  "\n".join(LINES) + "\n"))
        for line, res in zip(LINES, out.splitlines()):
            toks = torch.tensor([list(line.encode())])
            with torch.no_grad():
                lp = torch.log_softmax(model(toks).double(), -1)[0, :-1].gather(1, toks[0, 1:, None])[:, 0]
            self.assertLessEqual(rel(json.loads(res)["log_probs"], lp), TOL, line)

    def test_go_train_loads_here(self):
        recs, data = cls_data(self.d)
        for cfg, src in ((CLS, data), (LM, write(os.path.join(self.d, "text.txt"), TEXT))):
            with self.subTest(kind=cfg["mixer"]["kind"]):
                run = os.path.join(self.d, "run-" + cfg["task"])
                cp = write(os.path.join(self.d, cfg["task"] + ".json"), json.dumps(cfg))
                gobin.run("train", "--config", cp, "--data", src, "--out", run)
                model = tokenmix_torch.load_run(run)
                self.assertEqual(model.step, 3)
                opt = tokenmix_torch.optimizer(model)
                self.assertEqual(tokenmix_torch.load_optimizer(run, model, opt), 3)
                tokenmix_torch.step(model, opt, *(lambda b: (b["tokens"].long(), b["targets"].long()))(
                    parity.make_batch(model.cfg, 2, 2, 10)))
                model.load_weights(os.path.join(run, "ckpt", "00000003", "weights.safetensors"))
                model.step = 3
                # Logits against `tokenmix grad` on the checkpoint's weights.
                b = parity.make_batch(model.cfg, 1, 2, 10)
                bp = os.path.join(self.d, "b.safetensors")
                st.save(bp, b)
                op = os.path.join(self.d, "g.safetensors")
                if cfg["task"] == "classify":
                    gobin.run("grad", "--config", os.path.join(run, "config.json"), "--weights",
                              os.path.join(run, "ckpt", "00000003", "weights.safetensors"), "--batch", bp, "--out", op)
                    model.step = 0  # grad hashes at step 0
                    with torch.no_grad():
                        self.assertLessEqual(rel(model(b["tokens"].long()), st.load(op)[0]["logits"]), TOL)
                    model.step = 3
                    self.assertEqual(model.label_names, ["a", "b", "c"])
                    self.check_cls(run, recs, model)
                else:
                    self.check_lm(run, model)

    def test_save_run_loads_in_go(self):
        recs, _ = cls_data(self.d)
        for cfg in (CLS, LM):
            with self.subTest(kind=cfg["mixer"]["kind"]):
                model = tokenmix_torch.Model(cfg)
                model.load_weights(parity.make_weights(cfg, 3))
                opt = tokenmix_torch.optimizer(model)
                toks = torch.randint(1, cfg["vocab_size"], (2, 10))
                tgt = torch.randint(0, 3, (2,)) if cfg["task"] == "classify" else torch.randint(0, 256, (2, 10))
                model.step = 6
                tokenmix_torch.step(model, opt, toks, tgt)
                run = os.path.join(self.d, "saved-" + cfg["task"])
                if cfg["task"] == "classify":
                    model.label_names = ["a", "b", "c"]
                tokenmix_torch.save_run(model, run, step=7, optimizer=opt, state={"tokens": 20})
                self.assertEqual(os.listdir(os.path.join(run, "ckpt")), ["00000007"])
                back = tokenmix_torch.load_run(run)
                self.assertEqual(back.step, 7)
                if cfg["task"] == "classify":
                    self.check_cls(run, recs, model)
                else:
                    self.check_lm(run, model)


if __name__ == "__main__":
    unittest.main()
