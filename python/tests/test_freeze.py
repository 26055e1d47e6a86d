"""train.freeze in the twin: the parameters it names keep their values and
get no optimizer state while the others train, as in Go; a prefix that
matches no parameter, and a malformed freeze, are errors naming the key; a
pretraining stage freezes nothing."""
import os
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE)]
import tokenmix_torch  # noqa: E402
from tokenmix_torch import config as cfgmod  # noqa: E402

CFG = {"vocab_size": 32, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 8, "causal": True,
       "task": "lm", "mixer": {"kind": "full"},
       "train": {"batch_size": 2, "steps": 5, "lr": 1e-2, "weight_decay": 0.1, "seed": 1,
                 "freeze": ["embed.", "blocks.0."]}}


class FreezeTest(unittest.TestCase):
    def test_frozen_parameters_stay(self):
        torch.manual_seed(0)
        m = tokenmix_torch.Model(CFG)
        before = {n: p.detach().clone() for n, p in m.named_parameters()}
        tokens = torch.randint(0, 32, (2, 8))
        targets = torch.roll(tokens, -1, 1)
        opt = tokenmix_torch.optimizer(m)
        for _ in range(3):
            tokenmix_torch.step(m, opt, tokens, targets)
        frozen = trained = 0
        for n, p in m.named_parameters():
            same = torch.equal(before[n], p.detach())
            if n.startswith(("embed.", "blocks.0.")):
                self.assertTrue(same, f"{n} is frozen but changed")
                self.assertNotIn(p, opt.state, f"{n} is frozen but has optimizer state")
                frozen += 1
            elif not same:
                trained += 1
        self.assertGreater(frozen, 5)
        self.assertGreater(trained, 5)

    def test_errors(self):
        bad = dict(CFG, train=dict(CFG["train"], freeze=["encoder."]))
        with self.assertRaisesRegex(ValueError, r"train.freeze: 'encoder.' matches no parameter name"):
            tokenmix_torch.optimizer(tokenmix_torch.Model(bad))
        for v in ("embed.", [""], [3]):
            with self.assertRaisesRegex(ValueError, "train.freeze"):
                cfgmod.train(dict(CFG, train=dict(CFG["train"], freeze=v)))

    def test_pretraining_stage_freezes_nothing(self):
        c = dict(CFG, task="classify", n_classes=2, train=dict(CFG["train"], pretrain={"objective": "lm", "steps": 2}))
        self.assertNotIn("freeze", cfgmod.pretrain_stage(cfgmod.check(c))["train"])


if __name__ == "__main__":
    unittest.main()
