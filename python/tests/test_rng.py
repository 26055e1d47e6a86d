"""The shared random numbers: the committed LSH rotation draws (also checked
by Go's internal/mixer/lsh TestRotationDraws), Go's PassSeed and the
dropout masks (pinned as in Go's internal/model TestDropoutMask)."""
import json
import os
import struct
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from tokenmix_torch import lsh, rng  # noqa: E402

DRAWS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "internal", "mixer", "lsh", "testdata", "rotations.json")


class Rotations(unittest.TestCase):
    def test_committed_draws(self):
        with open(DRAWS) as f:
            doc = json.load(f)
        self.assertTrue(doc["draws"])
        for d in doc["draws"]:
            z = rng.lsh_normals(d["seed"], rng.lsh_stream(d["layer"], d["round"], d["head"]), len(d["bits"]))
            got = ["%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0] for x in z]
            self.assertEqual(got, d["bits"], f"stream {d['seed'], d['layer'], d['round'], d['head']}")

    def test_rotation_layout(self):
        # Row-major [dh, NB/2]: entry (a, b) is draw a·NB/2 + b.
        R = lsh.rotation(5, 3, 1, 2, 4, 6)
        z = rng.lsh_normals(5, rng.lsh_stream(3, 1, 2), 12)
        self.assertEqual(list(R.shape), [4, 3])
        self.assertEqual(R.reshape(-1).tolist(), z.tolist())

    def test_pass_seed(self):
        # splitmix64 of 0 is SplitMix64's first output for seed 0.
        self.assertEqual(rng.splitmix(0), 0xE220A8397B1DCDAF)
        self.assertEqual(rng.pass_seed(0, 0, 0), rng.splitmix(rng.splitmix(rng.splitmix(0))))


class Dropout(unittest.TestCase):
    def test_pinned_mask(self):
        # Go's TestDropoutMask: seed 1, step 0, layer 0, branch 0, p 0.25.
        keep = rng.dropout_keep(rng.dropout_key(rng.pass_seed(1, 0, 0), 0), 24, 0.25)
        self.assertEqual([j for j in range(24) if not keep[j]], [0, 3, 7, 8, 15, 19, 20, 21, 23])

    def test_rate_and_streams(self):
        key = rng.dropout_key(rng.pass_seed(7, 3, 1), 0)
        keep = rng.dropout_keep(key, 1 << 16, 0.25)
        self.assertAlmostEqual(1 - keep.mean(), 0.25, delta=0.01)
        self.assertFalse((keep == rng.dropout_keep(rng.dropout_key(rng.pass_seed(7, 3, 1), 1), 1 << 16, 0.25)).all())
        self.assertTrue(rng.dropout_keep(key, 100, 0).all())


if __name__ == "__main__":
    unittest.main()
